"""A bag keeps at most ROW_LEXEMES of its lexemes in its row; the rest lie in chunks of their own.

Recall's aggregate finds the matching bags by the lexemes of their live deposits
(deposits.search.postgres), which each bag row kept whole in `live_terms`, under a GIN index. A
write to a bag updates its row, and PostgreSQL indexes every lexeme of the new row version again:
a single add to a bag of 5,000 deposits cost 30 ms and to one of 20,000 cost 98 ms, growing with
the bag (docs/benchmarks/archive/2026-12-04-issue-23-bag-lexemes-and-ingest.md), and every owner
who writes without a scope keeps all of its deposits in one bag.

So the row holds at most ROW_LEXEMES. A write that would take it past them moves them, less those
the bag's chunks hold already (once it holds the row's lock), into `deposits_bagterms`: rows of
at most ROW_LEXEMES lexemes, written once and GIN-indexed by (bag, lexeme); fewer than
KEPT_IN_ROW new ones stay in the row instead (a bag whose words repeat spills often, but writes
few chunks). The bag is marked
(`terms_overflow`, with its row's lexemes not NULL: NULL still means a bag whose lexemes outgrew
a tsvector in one write and are kept nowhere), and the aggregate asks its chunks of it. The row
and the chunks together hold exactly the lexemes of the bag's live deposits: a recount (after a
retraction, supersession or erasure) deletes the chunks and writes the whole set again.

A trigger moves them, so every statement that writes `live_terms` obeys the bound: the counts'
upsert, the recount, the bench loader. It fires only past the bound (a `WHEN` the server checks
without calling it). SQLite keeps no lexemes: its recall scores every match.
"""

from __future__ import annotations

TABLE = "deposits_bagterms"
FUNCTION = "atlaso_spill_bag_terms"
TRIGGER = "atlaso_spill_bag_terms"
# Every seeded bag holds fewer (the bench's largest: 256), so only bags past the seed's shape
# spill; an add rewrites at most this many of its bag's lexemes.
ROW_LEXEMES = 512
KEPT_IN_ROW = 128


def function_sql(row_lexemes: int = ROW_LEXEMES, kept_in_row: int = KEPT_IN_ROW) -> str:
    """The trigger function, as the migrations install it.

    A test holds the two equal; another installs it with small bounds to reach them on small stores.
    """
    return f"""CREATE OR REPLACE FUNCTION {FUNCTION}() RETURNS trigger
LANGUAGE plpgsql
AS $function$
DECLARE
    fresh text[];
BEGIN
    IF TG_OP = 'UPDATE' THEN
        -- What the bag's chunks hold already is not kept twice. Only under the row's lock: a
        -- proposed row (INSERT … ON CONFLICT) is spilled before it, when a recount of the bag
        -- may be deleting the very chunks a lexeme would be left to.
        fresh := ARRAY(
            SELECT lexeme FROM unnest(tsvector_to_array(NEW.live_terms)) AS lexeme
            EXCEPT
            SELECT unnest(tsvector_to_array(t.terms)) FROM {TABLE} t WHERE t.bag_id = NEW.id
            ORDER BY 1
        );
    ELSE
        fresh := tsvector_to_array(NEW.live_terms);
    END IF;
    IF cardinality(fresh) >= {kept_in_row} THEN
        INSERT INTO {TABLE} (user_id, bag_id, terms)
        SELECT NEW.user_id, NEW.id, array_to_tsvector(fresh[part * {row_lexemes} + 1 : (part + 1) * {row_lexemes}])
        FROM generate_series(0, (cardinality(fresh) - 1) / {row_lexemes}) AS part;
        fresh := '{{}}';
    END IF;
    NEW.live_terms := array_to_tsvector(fresh);
    NEW.terms_overflow := true;
    RETURN NEW;
END
$function$"""


def install_sql(row_lexemes: int = ROW_LEXEMES, kept_in_row: int = KEPT_IN_ROW) -> list[str]:
    """The function and its trigger, created or replaced."""
    return [
        function_sql(row_lexemes, kept_in_row),
        f"DROP TRIGGER IF EXISTS {TRIGGER} ON deposits_scopebag",
        f"CREATE TRIGGER {TRIGGER} BEFORE INSERT OR UPDATE OF live_terms ON deposits_scopebag "
        f"FOR EACH ROW WHEN (length(NEW.live_terms) > {row_lexemes}) EXECUTE FUNCTION {FUNCTION}()",
    ]


def uninstall_sql() -> list[str]:
    return [f"DROP TRIGGER IF EXISTS {TRIGGER} ON deposits_scopebag", f"DROP FUNCTION IF EXISTS {FUNCTION}()"]


def forget_sql(where: str) -> str:
    """Delete the chunks of the bags `where` picks, before their lexemes are written again.

    `where` is a condition on `t`; the lexemes are then written again whole, or marked lost.
    """
    return f"DELETE FROM {TABLE} t WHERE {where}"


__all__ = [
    "KEPT_IN_ROW",
    "ROW_LEXEMES",
    "TABLE",
    "forget_sql",
    "function_sql",
    "install_sql",
    "uninstall_sql",
]
