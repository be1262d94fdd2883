"""`ensure_demo_key` (run by `make run`): one demo key, made once, and the export lines for it."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command
from django.utils import timezone

from atlaso_site.access.models import ApiKey
from tests.conftest import ApiClient


def run(settings, tmp_path) -> tuple[str, str]:
    settings.VAR_DIR = tmp_path
    out = StringIO()
    call_command("ensure_demo_key", "--base-url", "http://127.0.0.1:8000", stdout=out)
    export = out.getvalue().splitlines()[-1].strip()
    assert export.startswith("export ATLASO_BASE_URL=http://127.0.0.1:8000 ATLASO_API_KEY=")
    return export, export.rsplit("=", 1)[1]


def test_it_prints_an_export_line_whose_key_works(db, settings, tmp_path):
    _, secret = run(settings, tmp_path)
    assert ApiClient(secret).post("/users/alice/deposits", {"content": "likes tea"}).status == 201
    assert (tmp_path / "demo-api-key").read_text().strip() == secret
    assert (tmp_path / "demo-api-key").stat().st_mode & 0o777 == 0o600


def test_running_it_again_keeps_the_same_key(db, settings, tmp_path):
    first, _ = run(settings, tmp_path)
    second, _ = run(settings, tmp_path)
    assert first == second
    assert ApiKey.objects.count() == 1


def test_a_revoked_or_vanished_demo_key_is_replaced(db, settings, tmp_path):
    _, old = run(settings, tmp_path)
    ApiKey.objects.update(revoked_at=timezone.now())
    _, new = run(settings, tmp_path)
    assert new != old
    assert ApiClient(new).get("/keys/me").status == 200
    ApiKey.objects.all().delete()
    _, newest = run(settings, tmp_path)
    assert newest != new
    assert ApiClient(newest).get("/keys/me").status == 200
