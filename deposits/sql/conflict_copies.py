"""PostgreSQL keeps a copy of every deposit whose bag is in conflict, for recall to read first.

Recall lists the matches of conflict bags before any other (domain.md, Recall), and a large
owner's conflict bags hold a few percent of its deposits, so a polarity's places are almost
always filled from them alone: scoring their matches answers the query without reading the rest.
A GIN index over all of the owner's deposits cannot find those few without reading every match,
so the rows are kept apart, in `deposits_conflictcopy`, with the columns recall reads (the text
index too), by triggers on the deposits and the bags: a deposit written into a bag in conflict is
copied; a bag that enters conflict has its deposits copied, one that leaves has its copies
dropped; a retraction marks its copy; an erasure deletes it. Deposits are copied once per
statement, over the rows it wrote (a transition table), so a bulk write pays one join; a bag's
entry into or exit from conflict fires for that bag alone. The rule is `in_conflict_stored_sql`,
the one recall's aggregate applies, so a copy exists exactly while recall counts its bag in
conflict. A property test holds the copies to that rule after random adds, corrections,
retractions and erasures (tests/deposits/test_bag_rule_parity.py).

SQLite has the table but no triggers: its recall scores every match and never reads it.
"""

from __future__ import annotations

from deposits.sql.rules import in_conflict_stored_sql

TABLE = "deposits_conflictcopy"
COLUMNS = "id, user_id, bag_id, polarity, created_at, retracted_at, search_vector"
# The deposits' columns the copy keeps, as `d` has them.
_FROM_DEPOSIT = ", ".join(f"d.{column}" for column in COLUMNS.split(", "))

# Each trigger function's body.
_FUNCTIONS = {
    "atlaso_copy_added_deposits": f"""
    INSERT INTO {TABLE} ({COLUMNS})
    SELECT {_FROM_DEPOSIT} FROM added d JOIN deposits_scopebag b ON b.id = d.bag_id
    WHERE {in_conflict_stored_sql("b")}
    ON CONFLICT (id) DO NOTHING;
    RETURN NULL;
""",
    "atlaso_copy_retracted_deposit": f"""
    UPDATE {TABLE} SET retracted_at = NEW.retracted_at WHERE id = NEW.id;
    RETURN NULL;
""",
    "atlaso_copy_erased_deposits": f"""
    DELETE FROM {TABLE} c USING erased e WHERE c.id = e.id;
    RETURN NULL;
""",
    "atlaso_copy_conflict_bag": f"""
    INSERT INTO {TABLE} ({COLUMNS})
    SELECT {_FROM_DEPOSIT} FROM deposits_deposit d WHERE d.user_id = NEW.user_id AND d.bag_id = NEW.id
    ON CONFLICT (id) DO NOTHING;
    RETURN NULL;
""",
    "atlaso_uncopy_quiet_bag": f"""
    DELETE FROM {TABLE} WHERE user_id = NEW.user_id AND bag_id = NEW.id;
    RETURN NULL;
""",
}
FUNCTIONS = list(_FUNCTIONS)

# (trigger, event, table, how it fires, its function). A bulk write's deposits are copied by one
# join per statement, over the rows it inserted (a transition table); the rare changes (a bag
# entering or leaving conflict, a retraction) fire for the rows they concern alone, by a WHEN the
# server checks without calling a function, so a write that changes neither pays nothing for them.
_ENTERS = f"{in_conflict_stored_sql('NEW')} AND NOT ({in_conflict_stored_sql('OLD')})"
_LEAVES = f"{in_conflict_stored_sql('OLD')} AND NOT ({in_conflict_stored_sql('NEW')})"
_TRIGGERS: list[tuple[str, str, str, str, str]] = [
    (
        "atlaso_copy_added_deposits",
        "INSERT",
        "deposits_deposit",
        "REFERENCING NEW TABLE AS added FOR EACH STATEMENT",
        "atlaso_copy_added_deposits",
    ),
    (
        "atlaso_copy_retracted_deposit",
        "UPDATE",
        "deposits_deposit",
        "FOR EACH ROW WHEN (OLD.retracted_at IS DISTINCT FROM NEW.retracted_at)",
        "atlaso_copy_retracted_deposit",
    ),
    (
        "atlaso_copy_erased_deposits",
        "DELETE",
        "deposits_deposit",
        "REFERENCING OLD TABLE AS erased FOR EACH STATEMENT",
        "atlaso_copy_erased_deposits",
    ),
    (
        "atlaso_copy_new_conflict_bag",
        "INSERT",
        "deposits_scopebag",
        f"FOR EACH ROW WHEN ({in_conflict_stored_sql('NEW')})",
        "atlaso_copy_conflict_bag",
    ),
    (
        "atlaso_copy_conflict_bag",
        "UPDATE",
        "deposits_scopebag",
        f"FOR EACH ROW WHEN ({_ENTERS})",
        "atlaso_copy_conflict_bag",
    ),
    (
        "atlaso_uncopy_quiet_bag",
        "UPDATE",
        "deposits_scopebag",
        f"FOR EACH ROW WHEN ({_LEAVES})",
        "atlaso_uncopy_quiet_bag",
    ),
]
TRIGGERS = [trigger for trigger, *_ in _TRIGGERS]


def function_sql(name: str) -> str:
    """The CREATE FUNCTION of one trigger function, as the migrations install it."""
    return f"""CREATE OR REPLACE FUNCTION {name}() RETURNS trigger
LANGUAGE plpgsql
AS $function$
BEGIN{_FUNCTIONS[name]}END
$function$"""


def install_sql() -> list[str]:
    """Every function and trigger, created or replaced."""
    statements = [function_sql(name) for name in _FUNCTIONS]
    for trigger, event, table, fires, function in _TRIGGERS:
        statements += [
            f"DROP TRIGGER IF EXISTS {trigger} ON {table}",
            f"CREATE TRIGGER {trigger} AFTER {event} ON {table} {fires} EXECUTE FUNCTION {function}()",
        ]
    return statements


def uninstall_sql() -> list[str]:
    statements = [f"DROP TRIGGER IF EXISTS {trigger} ON {table}" for trigger, _, table, *_ in _TRIGGERS]
    return statements + [f"DROP FUNCTION IF EXISTS {name}()" for name in _FUNCTIONS]


def copy_all_sql() -> str:
    """Copy every deposit of a bag in conflict that is not copied yet."""
    return f"""INSERT INTO {TABLE} ({COLUMNS})
SELECT {_FROM_DEPOSIT} FROM deposits_deposit d JOIN deposits_scopebag b ON b.id = d.bag_id
WHERE {in_conflict_stored_sql("b")}
ON CONFLICT (id) DO NOTHING"""
