"""The landing page: what is running and where to go next."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from deposits.models import Deposit, ScopeBag


def home(request: HttpRequest) -> HttpResponse:
    context = {
        "deposit_count": Deposit.objects.filter(retracted_at__isnull=True).count(),
        "owner_count": ScopeBag.objects.values("user_id").distinct().count(),
    }
    return render(request, "home.html", context)
