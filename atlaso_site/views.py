"""The dashboard's logout (the pages live in the apps; the overview at `/` in diagnostics)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.views import LogoutView
from django.http import HttpRequest, HttpResponse


class DashboardLogoutView(LogoutView):
    """Django's logout (POST only), then the login page saying it is done."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = super().post(request, *args, **kwargs)
        messages.info(request, "You are logged out.")
        return response
