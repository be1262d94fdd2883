"""Recall's hit details come from a PostgreSQL function whose plan each connection keeps; its body
is the one the rules spell today."""

from __future__ import annotations

import pytest
from django.db import connection

from deposits.selectors.hits import DETAILS_FUNCTION, details_function_sql

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def test_the_installed_details_function_is_the_one_the_rules_spell(on_postgres):
    """A change to a rule the function spells (peers, dominance, live) needs a migration too."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = %s", [DETAILS_FUNCTION])
        (installed,) = cursor.fetchone()
    spelled = details_function_sql()
    assert (
        installed == spelled[spelled.index("$function$") + len("$function$") : spelled.rindex("$function$")]
    )
