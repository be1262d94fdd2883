"""The dashboard pages of deposits; the paths are fixed: outside browser tests use them."""

from __future__ import annotations

from django.urls import path

from deposits.views import bag, deposit, desk, queue, recall, resolved

app_name = "deposits"

urlpatterns = [
    path("conflicts/", queue.conflicts, name="conflicts"),
    path("conflicts/next/", desk.desk, name="desk"),
    path("conflicts/next/<str:user_id>/<str:bag_id>/resolve/", desk.desk_resolve, name="desk-resolve"),
    path("conflicts/next/<str:user_id>/<str:bag_id>/skip/", desk.desk_skip, name="desk-skip"),
    path("conflicts/next/<str:user_id>/<str:bag_id>/return/", desk.desk_return, name="desk-return"),
    path("conflicts/resolved/", resolved.resolved, name="resolved"),
    path("conflicts/resolved/<str:user_id>/<str:deposit_id>/undo/", desk.undo, name="undo"),
    path("conflicts/<str:user_id>/<str:bag_id>/take-over/", desk.take_over, name="take-over"),
    path("conflicts/<str:user_id>/<str:bag_id>/resolve/", queue.queue_resolve, name="queue-resolve"),
    path("owners/<str:user_id>/bags/<str:bag_id>/", bag.bag, name="bag"),
    path("owners/<str:user_id>/bags/<str:bag_id>/resolve/", bag.bag_resolve_view, name="bag-resolve"),
    path("owners/<str:user_id>/deposits/<str:deposit_id>/", deposit.deposit, name="deposit"),
    path(
        "owners/<str:user_id>/deposits/<str:deposit_id>/retract/",
        deposit.deposit_retract_view,
        name="deposit-retract",
    ),
    path(
        "owners/<str:user_id>/deposits/<str:deposit_id>/erase/",
        deposit.deposit_erase_view,
        name="deposit-erase",
    ),
    path("owners/<str:user_id>/recall/", recall.recall_playground, name="recall"),
]
