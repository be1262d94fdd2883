"""Recall's slice spelled in SQL (the one-statement read picks the hits whose details it reads)
picks exactly what `slice_hits` picks, and a hit read that way carries what the ORM read shows."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deposits.domain.recall import Candidate, reserved_places, slice_hits
from deposits.domain.types import POLARITIES
from deposits.selectors.hits import DETAILS_FUNCTION, details_function_sql
from deposits.sql.rules import slice_sql

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

# Few distinct scores, so ties (broken by id) are common.
candidate = st.builds(
    lambda number, polarity, score, in_conflict: Candidate(
        str(uuid.UUID(int=number)), "bag", polarity, score, in_conflict
    ),
    st.integers(0, 2**128 - 1),
    st.sampled_from(POLARITIES),
    st.sampled_from([0.0, 0.01, 0.02, 0.0304, 0.0608]),
    st.booleans(),
)


def chosen_in_sql(candidates: list[Candidate], limit: int) -> list[str]:
    places = reserved_places(limit)
    sql = f"""
WITH top AS (
    SELECT * FROM unnest(%s::uuid[], %s::text[], %s::float8[], %s::bool[]) AS t(id, polarity, score, in_conflict)
),
{slice_sql("top")}
SELECT chosen.id::text FROM chosen"""
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            [
                [c.id for c in candidates],
                [c.polarity for c in candidates],
                [c.score for c in candidates],
                [c.in_conflict for c in candidates],
                list(places),
                list(places.values()),
                limit,
                limit,
            ],
        )
        return [row[0] for row in cursor.fetchall()]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(candidates=st.lists(candidate, max_size=48, unique_by=lambda c: c.id), limit=st.integers(1, 12))
def test_the_slice_in_sql_picks_what_the_python_rule_picks(candidates, limit, on_postgres):
    # As the backend hands them over: each polarity's first `limit` in recall's order.
    ordered = sorted(candidates, key=lambda c: c.order_key)
    top = [c for p in POLARITIES for c in [c for c in ordered if c.polarity == p][:limit]]
    assert sorted(chosen_in_sql(top, limit)) == sorted(c.id for c in slice_hits(top, limit))


def test_the_installed_details_function_is_the_one_the_rules_spell(on_postgres):
    """A change to a rule the function spells (peers, dominance, live) needs a migration too."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = %s", [DETAILS_FUNCTION])
        (installed,) = cursor.fetchone()
    spelled = details_function_sql()
    assert (
        installed == spelled[spelled.index("$function$") + len("$function$") : spelled.rindex("$function$")]
    )
