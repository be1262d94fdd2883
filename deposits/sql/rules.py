"""The bag rules of `deposits.domain.bags` spelled in SQL, for the raw queries.

For the raw queries of `deposits.search` and `deposits.services.bag_counts`. Built from the domain's
constants; a property test pins each fragment to the rule.

Every fragment takes the table alias it applies to, so one spelling serves every query.
"""

from __future__ import annotations

from collections.abc import Iterable

from deposits.domain.bags import CONFLICT_MIN_KINDS, THIN_MAX_DIRECTIONAL
from deposits.domain.types import DIRECTIONAL, POLARITIES


def directional_sql(bag: str = "bag") -> str:
    """How many live directional deposits the bag holds."""
    return "(" + " + ".join(f"{bag}.live_{p}" for p in DIRECTIONAL) + ")"


def directional_kinds_sql(bag: str = "bag") -> str:
    """How many directional polarities the bag's live deposits take."""
    return "(" + " + ".join(f"(CASE WHEN {bag}.live_{p} > 0 THEN 1 ELSE 0 END)" for p in DIRECTIONAL) + ")"


def in_conflict_sql(bag: str = "bag") -> str:
    return f"{directional_kinds_sql(bag)} >= {CONFLICT_MIN_KINDS}"


def confident_sql(bag: str = "bag") -> str:
    return f"NOT ({in_conflict_sql(bag)}) AND {directional_sql(bag)} > {THIN_MAX_DIRECTIONAL}"


def in_conflict_stored_sql(bag: str = "bag") -> str:
    """`in_conflict_sql` read from the bag's stored rule columns (deposits/0009), not recounted."""
    return f"{bag}.directional_kinds >= {CONFLICT_MIN_KINDS}"


def confident_stored_sql(bag: str = "bag") -> str:
    """`confident_sql` read from the bag's stored rule columns."""
    return f"{bag}.directional_kinds < {CONFLICT_MIN_KINDS} AND {bag}.directional > {THIN_MAX_DIRECTIONAL}"


def dominant_sql(bag: str = "bag") -> str:
    """The directional polarity with most live deposits, a tie to the newest; NULL when none.

    A missing newest sorts last, then DIRECTIONAL's order decides, as Python's max keeps the first.
    """
    arms = " UNION ALL ".join(
        f"SELECT '{p}' AS polarity, {bag}.live_{p} AS n, {bag}.newest_{p}_at AS newest, {i} AS o"
        for i, p in enumerate(DIRECTIONAL)
    )
    return (
        f"(SELECT v.polarity FROM ({arms}) v WHERE v.n > 0 "
        "ORDER BY v.n DESC, v.newest IS NULL, v.newest DESC, v.o LIMIT 1)"
    )


def holds_live_sql(bag: str = "bag") -> str:
    return "(" + " OR ".join(f"{bag}.live_{p} > 0" for p in POLARITIES) + ")"


def superseded_sql(deposit: str = "d", *, owner_param: bool = False) -> str:
    """The deposit is the old side of a superseding contradiction edge.

    One whose source, the correction, is not soft-retracted: the edge's `superseding` flag, cleared
    by the retraction.

    With `owner_param` the edges are narrowed to one owner first (one %s: the user_id), which
    lets PostgreSQL hash that owner's edges once instead of probing per row; edges only ever
    link one owner's deposits, so both forms say the same.
    """
    if owner_param:
        return (
            f"{deposit}.id IN (SELECT c.old_deposit_id FROM deposits_contradiction c "
            "WHERE c.user_id = %s AND c.superseding)"
        )
    return f"EXISTS (SELECT 1 FROM deposits_contradiction c WHERE c.old_deposit_id = {deposit}.id AND c.superseding)"


def live_sql(deposit: str = "d", *, owner_param: bool = False) -> str:
    """Neither soft-retracted nor superseded (one %s with `owner_param`: the user_id)."""
    return f"{deposit}.retracted_at IS NULL AND NOT {superseded_sql(deposit, owner_param=owner_param)}"


def in_bags_with_sql(facets: Iterable[str], deposit: str = "d") -> str:
    """The deposit's bag has the given facets.

    Its parameters: the owner, then each facet's value as bags compare it
    (`deposits.domain.bags.compared`). A bag holds its facets so, whatever form each of its deposits
    was sent in, so this is how a scope filter compares a deposit's.
    """
    conditions = "".join(f" AND fb.{name} = %s" for name in facets)
    return f"{deposit}.bag_id IN (SELECT fb.id FROM deposits_scopebag fb WHERE fb.user_id = %s{conditions})"
