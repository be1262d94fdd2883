from __future__ import annotations

import pytest
from django.test import Client

from deposits.services import deposit_add


@pytest.mark.django_db
def test_the_landing_page_counts_what_is_stored_and_links_to_the_api_docs():
    deposit_add(user_id="alice", data={"content": "Alice prefers oat milk"}, channel="agent-a")
    page = Client().get("/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "1 deposit for 1 memory owner" in text
    assert 'href="/api/v1/docs"' in text
