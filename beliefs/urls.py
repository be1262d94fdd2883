"""The dashboard pages of beliefs; the paths are fixed: outside browser tests use them.

The provenance forms post to paths of their own under /provenance/, each answering the page
(htmx: its body) again; the rebuild's progress is a fragment the page polls.
"""

from __future__ import annotations

from django.urls import path

from beliefs import views

app_name = "beliefs"

urlpatterns = [
    path("owners/<str:user_id>/beliefs/", views.belief_list, name="belief-list"),
    path("owners/<str:user_id>/beliefs/<str:key>/", views.belief_detail, name="belief"),
    path("provenance/", views.provenance, name="provenance"),
    path("provenance/tiers/", views.tier_save, name="tier-save"),
    path("provenance/channels/", views.channel_create, name="channel-create"),
    path("provenance/channels/rebind/", views.channel_rebind, name="channel-rebind"),
    path("provenance/keys/", views.api_key_new, name="api-key-create"),
    path("provenance/keys/<int:key_id>/revoke/", views.api_key_revoke_view, name="api-key-revoke"),
    path("provenance/rebuilds/<uuid:run_id>/", views.rebuild_progress, name="rebuild-progress"),
]
