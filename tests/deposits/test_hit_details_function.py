"""Recall's hit details come from a PostgreSQL function whose plan each connection keeps.

Its body is the one the rules spell.
"""

from __future__ import annotations

import pytest

from deposits.selectors.hits import DETAILS_FUNCTION, details_function_sql
from tests.deposits.functions import installed_body, spelled_body

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def test_the_installed_details_function_is_the_one_the_rules_spell(on_postgres):
    """A change to a rule the function spells (peers, dominance, live) needs a migration too."""
    assert installed_body(DETAILS_FUNCTION) == spelled_body(details_function_sql())
