"""The landing page and the dashboard's login and logout."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.views import LogoutView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from atlaso_site.lib.dashboard_access import reviewer_required
from deposits.models import Deposit, ScopeBag


@reviewer_required
def home(request: HttpRequest) -> HttpResponse:
    context = {
        "deposit_count": Deposit.objects.filter(retracted_at__isnull=True).count(),
        "owner_count": ScopeBag.objects.values("user_id").distinct().count(),
    }
    return render(request, "home.html", context)


class DashboardLogoutView(LogoutView):
    """Django's logout (POST only), then the login page saying it is done."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = super().post(request, *args, **kwargs)
        messages.info(request, "You are logged out.")
        return response
