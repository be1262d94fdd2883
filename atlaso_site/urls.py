from django.contrib import admin
from django.contrib.auth.views import LoginView
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from atlaso_site.api import api
from atlaso_site.views import DashboardLogoutView

# A lost database met outside a view is the 503 page, not a 500 (atlaso_site.middleware).
handler500 = "atlaso_site.views.server_error"

urlpatterns = [
    # Browsers ask for /favicon.ico on pages that name no icon (the API docs, the admin).
    path("favicon.ico", RedirectView.as_view(url=static("img/favicon.svg"), permanent=True)),
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/logout/", DashboardLogoutView.as_view(), name="logout"),
    path("", include("diagnostics.urls")),
    path("", include("deposits.urls")),
    path("", include("beliefs.urls")),
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
]
