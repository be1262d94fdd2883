"""The site's URLs plus a reviewer page, an operator page and an operator htmx action.

For testing the access checks and the 403 page before the real pages exist
(`pytest.mark.urls("tests.dashboard_urls")`).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template import engines
from django.urls import path

from atlaso_site.access.roles import OPERATOR, operator_required, require_role, reviewer_required
from atlaso_site.urls import urlpatterns as site_urlpatterns

PAGE = engines["django"].from_string(
    '{% extends "base.html" %}{% block content %}<h1>{{ title }}</h1>{% endblock %}'
)


@reviewer_required
def reviewer_page(request: HttpRequest) -> HttpResponse:
    return HttpResponse(PAGE.render({"title": "Reviewer page"}, request))


@reviewer_required
def reviewer_page_with_operator_action(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        require_role(request, OPERATOR)
        return render(request, "base.html")
    return HttpResponse(PAGE.render({"title": "Deposit"}, request))


@operator_required
def operator_page(request: HttpRequest) -> HttpResponse:
    return HttpResponse(PAGE.render({"title": "Provenance"}, request))


@operator_required
def operator_action(request: HttpRequest) -> HttpResponse:
    return HttpResponse('<p id="done">Done.</p>')


urlpatterns = [
    path("test/reviewer/", reviewer_page),
    path("test/deposit/", reviewer_page_with_operator_action),
    path("test/operator/", operator_page),
    path("test/operator-action/", operator_action),
    *site_urlpatterns,
]
