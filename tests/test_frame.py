"""templates/base.html: navigation by role, the login, htmx from our own static files, CSRF for htmx."""

from __future__ import annotations

import re

import pytest
from django.contrib import messages
from django.contrib.auth.models import AnonymousUser
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.template import engines
from django.test import Client

from atlaso_site.access.roles import is_operator, is_reviewer
from atlaso_site.ui.navigation import dashboard
from tests.cast import make_login

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.dashboard_urls")]

ALL = ["Overview", "Owners", "Conflicts", "Review desk", "Health", "Jobs", "Provenance"]


def nav_labels(html: str) -> list[str]:
    nav = re.search(r'<nav class="mainnav".*?</nav>', html, re.S)
    return re.findall(r">([^<]+)</a>", nav.group(0)) if nav else []


@pytest.mark.parametrize(
    ("role", "labels"),
    [("reviewer", ALL[:6]), ("operator", ALL), ("superuser", ALL)],
)
def test_the_navigation_shows_provenance_only_to_operators(client, role, labels):
    client.force_login(make_login(role))
    html = client.get("/test/reviewer/").content.decode()
    assert nav_labels(html) == labels
    assert '<a href="/" aria-current="page">' not in html


def test_the_current_page_is_marked_in_the_navigation(client):
    client.force_login(make_login("operator"))
    html = client.get("/").content.decode()
    assert '<a href="/" aria-current="page">Overview</a>' in html
    assert html.count("aria-current") == 1


def test_anonymous_pages_show_no_navigation_and_no_logout(client):
    html = client.get("/accounts/login/").content.decode()
    assert 'class="mainnav"' not in html and "Log out" not in html


def test_the_frame_names_the_login_and_offers_a_logout_form(client):
    client.force_login(make_login("reviewer"))
    html = client.get("/test/reviewer/").content.decode()
    assert '<form class="account" method="post" action="/accounts/logout/">' in html
    assert re.search(r'<span class="username" title="reviewer">rita</span>', html)
    assert '<button type="submit" class="button-link">Log out</button>' in html


def test_htmx_sends_the_csrf_token_of_the_page(client):
    client.force_login(make_login("reviewer"))
    response = client.get("/test/reviewer/")
    token = re.search(r"""<body hx-headers='\{"X-CSRFToken": "([^"]+)"\}'>""", response.content.decode())
    assert token, "no hx-headers on <body>"
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(make_login("operator"))
    page = strict.get("/test/operator/")
    token = re.search(r'"X-CSRFToken": "([^"]+)"', page.content.decode()).group(1)
    assert strict.post("/test/operator-action/").status_code == 403
    assert strict.post("/test/operator-action/", headers={"X-CSRFToken": token}).status_code == 200


def test_messages_are_shown_in_the_frame(rf):
    request = rf.get("/")
    request.user = make_login("reviewer")
    request.session = {}
    request._messages = FallbackStorage(request)
    messages.success(request, "Resolved <the> bag.")
    html = engines["django"].get_template("base.html").render({}, request)
    assert '<li class="message success" role="status">Resolved &lt;the&gt; bag.</li>' in html


def test_htmx_comes_from_the_django_htmx_package_through_staticfiles(settings):
    template = engines["django"].from_string("{% load django_htmx %}{% htmx_script %}")
    settings.DEBUG = False
    assert template.render({}) == '<script src="/static/django_htmx/htmx-2.min.js" defer></script>'
    settings.DEBUG = True
    assert template.render({}) == (
        '<script src="/static/django_htmx/htmx-2.min.js" defer></script>'
        '<script src="/static/django_htmx/django-htmx.js" data-debug="True" defer></script>'
    )
    assert finders.find("django_htmx/htmx-2.min.js")


def test_whitenoise_serves_htmx_and_the_stylesheet_after_collectstatic(settings, tmp_path):
    settings.STATIC_ROOT = tmp_path
    call_command("collectstatic", "--no-input", "-v", "0", "-i", "admin", "-i", "ninja")
    settings.DEBUG = False
    settings.WHITENOISE_USE_FINDERS = False
    client = Client()  # a new handler: WhiteNoise reads STATIC_ROOT when it starts
    for path in ("/static/django_htmx/htmx-2.min.js", "/static/css/atlaso.css"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert b"".join(response.streaming_content)


def test_the_context_processor_reads_roles_only_when_a_template_asks(rf, django_assert_num_queries):
    request = rf.get("/owners/alice/")
    request.user = make_login("operator")
    with django_assert_num_queries(0):
        context = dashboard(request)
    with django_assert_num_queries(1):
        assert [item["label"] for item in context["navigation"]()] == ALL
        assert context["is_operator"]() and context["is_reviewer"]()
    current = [item["label"] for item in context["navigation"]() if item["current"]]
    assert current == ["Owners"]


def test_roles_follow_group_membership_and_superusers_are_operators():
    assert (is_reviewer(make_login("reviewer")), is_operator(make_login("reviewer"))) == (True, False)
    assert (is_reviewer(make_login("operator")), is_operator(make_login("operator"))) == (True, True)
    assert (is_reviewer(make_login("no-role")), is_operator(make_login("no-role"))) == (False, False)
    assert is_operator(make_login("superuser"))
    assert not is_reviewer(AnonymousUser())
