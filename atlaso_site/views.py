"""The dashboard's logout and the site's 500 handler.

The pages live in the apps; the overview at `/` in diagnostics.
"""

from __future__ import annotations

import sys
from typing import Any

from django.contrib import messages
from django.contrib.auth.views import LogoutView
from django.http import HttpRequest, HttpResponse
from django.views import defaults

from atlaso_site.admission import is_api
from atlaso_site.middleware import page_unavailable
from atlaso_site.ui.pages import DATABASE_DOWN


class DashboardLogoutView(LogoutView):
    """Django's logout (POST only), then the login page saying it is done."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = super().post(request, *args, **kwargs)
        messages.info(request, "You are logged out.")
        return response


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: a lost database is the 503 page wherever it is met; any other failure Django's 500.

    A lost database met outside a view (a 404 page drawing the frame, a middleware) answers as it
    would in a view.
    """
    failure = sys.exc_info()[1]
    if isinstance(failure, DATABASE_DOWN) and not is_api(request):
        return page_unavailable(request, failure)
    return defaults.server_error(request)
