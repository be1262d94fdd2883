"""The beliefs cast: keys on channels of the tiers the scenarios need, and an eager worker."""

from __future__ import annotations

import pytest

from tests.conftest import ApiClient, make_client


@pytest.fixture
def owner(db: None) -> ApiClient:
    """A read/write key on the owner's own app: tier user_direct (κ 0.98)."""
    return make_client(channel="owner-app", tier="user_direct")


@pytest.fixture
def web(db: None) -> ApiClient:
    """A read/write key on a web fetcher: tier web_fetch (κ 0.30), below the pivot."""
    return make_client(channel="web-reader", tier="web_fetch")


@pytest.fixture
def admin(db: None) -> ApiClient:
    """An operator's key: read and admin, on an untrusted channel (admin grants no trust)."""
    return make_client(channel="ops-console", tier="untrusted", perms=("read", "admin"))


@pytest.fixture
def eager_worker(settings, django_capture_on_commit_callbacks):
    """Run tasks sent on commit in-process; yields the capture to use as a context manager."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    return django_capture_on_commit_callbacks
