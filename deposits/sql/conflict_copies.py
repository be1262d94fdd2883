"""PostgreSQL keeps a copy of every deposit whose bag is in conflict, for recall to read first.

Recall lists the matches of conflict bags before any other (domain.md, Recall), and a large
owner's conflict bags hold a few percent of its deposits, so a polarity's places are almost
always filled from them alone: scoring their matches answers the query without reading the rest.
A GIN index over all of the owner's deposits cannot find those few without reading every match,
so the rows are kept apart, in `deposits_conflictcopy`, with the columns recall reads (the text
index too), by triggers on the deposits and the bags: a deposit written into a bag in conflict is
copied; a bag that enters conflict has its deposits copied, one that leaves has its copies
dropped; a retraction marks its copy; an erasure deletes it. The triggers are statement-level,
over the rows the statement changed (transition tables), so a bulk write pays one join, not one
per row. The rule is `in_conflict_stored_sql`, the one recall's aggregate applies, so a copy
exists exactly while recall counts its bag in conflict. A property test holds the copies to that
rule after random adds, corrections, retractions and erasures (tests/deposits/test_bag_rule_parity.py).

SQLite has the table but no triggers: its recall scores every match and never reads it.
"""

from __future__ import annotations

from deposits.sql.rules import in_conflict_stored_sql

TABLE = "deposits_conflictcopy"
COLUMNS = "id, user_id, bag_id, polarity, created_at, retracted_at, search_vector"
# The deposits' columns the copy keeps, as `d` has them.
_FROM_DEPOSIT = ", ".join(f"d.{column}" for column in COLUMNS.split(", "))

# (function, table, event, transition tables, body): each trigger runs its function once per statement.
_TRIGGERS: list[tuple[str, str, str, str, str]] = [
    (
        "atlaso_copy_added_deposits",
        "deposits_deposit",
        "INSERT",
        "NEW TABLE AS added",
        f"""
    INSERT INTO {TABLE} ({COLUMNS})
    SELECT {_FROM_DEPOSIT} FROM added d JOIN deposits_scopebag b ON b.id = d.bag_id
    WHERE {in_conflict_stored_sql("b")}
    ON CONFLICT (id) DO NOTHING;
    RETURN NULL;
""",
    ),
    (
        "atlaso_copy_retracted_deposits",
        "deposits_deposit",
        "UPDATE",
        "OLD TABLE AS old_rows NEW TABLE AS new_rows",
        f"""
    UPDATE {TABLE} c SET retracted_at = a.retracted_at
    FROM new_rows a WHERE c.id = a.id AND c.retracted_at IS DISTINCT FROM a.retracted_at;
    RETURN NULL;
""",
    ),
    (
        "atlaso_copy_erased_deposits",
        "deposits_deposit",
        "DELETE",
        "OLD TABLE AS erased",
        f"""
    DELETE FROM {TABLE} c USING erased e WHERE c.id = e.id;
    RETURN NULL;
""",
    ),
    (
        "atlaso_copy_new_conflict_bags",
        "deposits_scopebag",
        "INSERT",
        "NEW TABLE AS added",
        f"""
    INSERT INTO {TABLE} ({COLUMNS})
    SELECT {_FROM_DEPOSIT} FROM added b JOIN deposits_deposit d ON d.user_id = b.user_id AND d.bag_id = b.id
    WHERE {in_conflict_stored_sql("b")}
    ON CONFLICT (id) DO NOTHING;
    RETURN NULL;
""",
    ),
    (
        "atlaso_copy_changed_conflict_bags",
        "deposits_scopebag",
        "UPDATE",
        "OLD TABLE AS old_rows NEW TABLE AS new_rows",
        f"""
    INSERT INTO {TABLE} ({COLUMNS})
    SELECT {_FROM_DEPOSIT}
    FROM new_rows b JOIN old_rows o ON o.id = b.id
    JOIN deposits_deposit d ON d.user_id = b.user_id AND d.bag_id = b.id
    WHERE {in_conflict_stored_sql("b")} AND NOT ({in_conflict_stored_sql("o")})
    ON CONFLICT (id) DO NOTHING;
    DELETE FROM {TABLE} c USING new_rows b JOIN old_rows o ON o.id = b.id
    WHERE c.user_id = b.user_id AND c.bag_id = b.id
      AND NOT ({in_conflict_stored_sql("b")}) AND {in_conflict_stored_sql("o")};
    RETURN NULL;
""",
    ),
]

FUNCTIONS = [function for function, *_ in _TRIGGERS]


def function_sql(name: str) -> str:
    """The CREATE FUNCTION of one trigger's function, as the migrations install it."""
    body = next(body for function, *_, body in _TRIGGERS if function == name)
    return f"""CREATE OR REPLACE FUNCTION {name}() RETURNS trigger
LANGUAGE plpgsql
AS $function$
BEGIN{body}END
$function$"""


def install_sql() -> list[str]:
    """Every function and trigger, created or replaced."""
    statements = []
    for function, table, event, transitions, _ in _TRIGGERS:
        statements += [
            function_sql(function),
            f"DROP TRIGGER IF EXISTS {function} ON {table}",
            f"CREATE TRIGGER {function} AFTER {event} ON {table} REFERENCING {transitions} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {function}()",
        ]
    return statements


def uninstall_sql() -> list[str]:
    statements = []
    for function, table, *_ in _TRIGGERS:
        statements += [
            f"DROP TRIGGER IF EXISTS {function} ON {table}",
            f"DROP FUNCTION IF EXISTS {function}()",
        ]
    return statements


def copy_all_sql(where: str = "TRUE") -> str:
    """Copy every deposit of a bag in conflict that is not copied yet (`where` narrows the deposits `d`)."""
    return f"""INSERT INTO {TABLE} ({COLUMNS})
SELECT {_FROM_DEPOSIT} FROM deposits_deposit d JOIN deposits_scopebag b ON b.id = d.bag_id
WHERE {in_conflict_stored_sql("b")} AND {where}
ON CONFLICT (id) DO NOTHING"""
