"""What Atlaso's agent tools say and answer, whatever framework carries them.

The MCP server (`mcp_server`) and LangChain's tools (`integrations.langchain`) describe their
tools to a model with the same words, teach the same refusals and answer recall and conflicts
with the same text and structured content; this module holds all of it, and imports no
framework, so each integration needs only its own.
"""

from __future__ import annotations

import inspect
from typing import Any
from urllib.parse import quote

from atlaso import _operations as ops
from atlaso._errors import (
    HOW_TO_GET_A_KEY,
    AtlasoError,
    AuthenticationError,
    DepositRejectedError,
    IdempotencyKeyConflict,
    InputValidationError,
    MissingContradictsError,
)
from atlaso._plan import Plan
from atlaso._types import Bag, BagPage, Deposit, SearchResults


def prose(text: str) -> str:
    """`text` as flowing paragraphs, without the source's indentation or line wrapping."""
    return "\n\n".join(" ".join(p.split()) for p in inspect.cleandoc(text).split("\n\n"))


INSTRUCTIONS = """\
Atlaso is a memory of typed claims about a person or a system (its owner, `user_id`). Each
claim has a polarity (positive: X works or is true; negative: X failed; cautionary: X works
but with caveats; open: a note or question), an evidence grade (anecdotal < observed <
replicated < verified) and a scope of facets (model, dataset, env, version, n, seed). Claims
with the same facets form a bag; a bag holding two directional polarities is a conflict.

Before answering from memory, `recall`: trust a hit only when `is_confident` is true, and when
`has_disagreement` is true say that the memory disagrees instead of picking a side. Write what
you learn with `add` (a write gate refuses weak claims: broad positive claims need replicated
evidence). Claims are immutable: to correct one, `contradict` it. `conflicts` lists what a
person should resolve; `settle` asks the person which side holds, where the host can ask."""

USER_ID_HELP = "The memory owner: the person or system the claims are about, e.g. 'alice'."
SCOPE_HELP = (
    "Facets that pin the claim to a context: model, dataset, env, version (text), n, seed "
    "(whole numbers), and note (searchable text, not a facet). Two or more facets make the claim "
    "narrow, which the gate asks less evidence of; env or version also count as provenance."
)
POLARITY_HELP = (
    "positive: X works / is true; negative: X doesn't work / failed; cautionary: works with "
    "caveats; open: a note or open question (never conflicts, always accepted)."
)
GRADE_HELP = (
    "anecdotal: one observation, no logs; observed: measured at least once with artifacts; "
    "replicated: several independent observations agree; verified: replicated with provenance."
)
FILTER_HELP = (
    "Only claims whose facets equal these (model, dataset, env, version, n, seed); facets left "
    "out are not compared."
)
CONTENT_HELP = "The claim, in plain words (1..8000 characters)."
QUERY_HELP = "Words to search for (not a question: plain keywords work best)."
TAGS_HELP = "Free-form labels."
ARTIFACTS_HELP = "Links to logs, runs or files backing the claim (provenance)."
RECALL_LIMIT_HELP = "How many hits to return."
CONFLICTS_LIMIT_HELP = "How many conflict bags."

# Each tool's description, for a model: what it is for, when to use which, what the flags mean.
_DESCRIPTIONS = {
    "add": """Store one claim the agent learned about the owner. A write gate refuses weak claims
        (a broad positive claim needs replicated evidence; negative and cautionary ones need
        provenance or a narrow scope); the error says what would pass. Claims are immutable:
        to correct one, use contradict instead.""",
    "recall": """Search the owner's memory before answering from it. Each hit carries its bag's flags:
        is_confident (several claims agree, none disagree: safe to rely on), has_disagreement
        (claims in the same scope conflict: say so, do not pick a side), is_thin_evidence (only
        one claim). The top-level has_disagreement covers every matching bag, beyond limit. Each
        hit is the claim with who wrote it (author, channel) and its evidence (artifact_refs);
        get reads the whole deposit.""",
    "get": """Read one deposit with its audit state: superseded_by (the corrections that replaced it)
        and retracted.""",
    "list_recent": """List the owner's deposits, newest first, to browse what the memory holds. To find
        claims about something, use recall instead; page through with offset.""",
    "contradict": """Correct earlier claims: writes a new deposit (through the gate) that supersedes them.
        The old ones stay readable for audit but stop counting. Use this, not add, when a claim
        turned out wrong or outdated.""",
    "retract": """Withdraw a claim that should never have been stored. To replace a claim with a better
        one, use contradict instead. mode='hard' erases it and cannot be undone.""",
    "health": """How trustworthy the owner's memory is: the Field Maturity Index (0-100) and its four
        pillars (coverage: searches that found a confident answer; precision: agreement inside
        bags; resolution: conflicts resolved; density: bags with more than one claim).""",
    "peek": """A quick look at the owner's memory: the newest live claims, how many there are, the FMI,
        and whether a recent bag is in conflict. Use it at the start of a conversation.""",
    "add_many": """Import many claims at once. Each item needs an idempotency_key, so sending the batch
        again after a failure stores nothing twice (replays come back as duplicates).""",
    "conflicts": """List the owner's conflicts: bags whose live claims still disagree, with each side's
        claims and the dashboard page where a person resolves it. Tell the user about them
        rather than resolving them yourself.""",
    "settle": """Ask the person which side of a conflict holds, and record their answer. Give a bag_id
        from conflicts: the host shows the person a form naming each side's claims; the side
        they choose is written as a correction that supersedes the other side, with their words
        as its reason. Nothing is written when they decline or dismiss it. A host that cannot
        ask the person gets the dashboard page where a person settles it instead; never pick a
        side yourself.""",
}
DESCRIPTIONS: dict[str, str] = {name: prose(text) for name, text in _DESCRIPTIONS.items()}


def teach(error: AtlasoError, *, no_key: str | None = None, refused_key: str | None = None) -> str:
    """The API's message, and what the model could do that would succeed.

    `no_key` is what to say when the caller has no key at all, `refused_key` the opening of the
    answer to a key the server refused: each carrier of the tools knows where its key comes from.
    """
    if isinstance(error, DepositRejectedError):
        reason = error.gate_reason or error.message
        return (
            f"The write gate refused this claim: {reason}. Nothing was stored. Resubmit only what is "
            "true: the evidence_grade you actually have, a narrower scope (two or more facets, e.g. "
            "model and dataset) if the claim only holds there, or the provenance it asks for "
            "(artifact_refs, or scope env/version). If it is only a note or an open question, "
            "polarity 'open' is always accepted."
        )
    if isinstance(error, MissingContradictsError):
        return (
            f"{error.message} Missing: {', '.join(error.missing) or '?'}. Use ids from recall or "
            "list_recent for this same user_id."
        )
    if isinstance(error, InputValidationError):
        allowed = f" Allowed: {', '.join(error.allowed)}." if error.allowed else ""
        field = f" (field {error.field})" if error.field else ""
        return f"Invalid input{field}: {error.message}{allowed}"
    if isinstance(error, IdempotencyKeyConflict):
        return (
            f"{error.message} The deposit that key wrote is {error.existing_id}; use a new "
            "idempotency_key for a new claim."
        )
    if isinstance(error, AuthenticationError):
        if error.status_code is None:
            return no_key or HOW_TO_GET_A_KEY
        opening = refused_key or "Atlaso refused this API key (unknown or revoked)"
        return f"{opening}: {error.message}"
    return error.message


def deposit_line(deposit: Deposit) -> str:
    """One deposit as a line a model reads: id, polarity/grade, content."""
    return f"{deposit.id}: {deposit.polarity}/{deposit.evidence_grade}: {deposit.content}"


# What a recall hit keeps of its deposit beside the fields the hit already carries: who wrote it,
# where it came from and what it corrects. `get` reads the rest.
_HIT_PROVENANCE = ("author", "author_role", "channel", "artifact_refs", "contradicts")


def recall_structured(results: SearchResults) -> dict[str, Any]:
    """Recall's wire object with each hit's deposit written once.

    The API's hit repeats its deposit whole (`deposit`) beside the id, content, polarity, grade,
    scope and tags it already lists: half of what a model would read twice.
    """
    answer = results.to_dict()
    for hit in answer["items"]:
        deposit = hit.pop("deposit")
        hit.update({name: deposit[name] for name in _HIT_PROVENANCE})
    return answer


def recall_text(results: SearchResults) -> str:
    """The verdict line, then each hit with its flag."""
    lines = [results.explain()]
    for hit in results:
        flag = "conflict" if hit.has_disagreement else ("confident" if hit.is_confident else "not confident")
        lines.append(f"- [{flag}] {hit.polarity}/{hit.evidence_grade} {hit.id}: {hit.content}")
    return "\n".join(lines)


DIRECTIONAL = ("positive", "negative", "cautionary")


def live_sides(bag: Bag) -> dict[str, list[dict[str, Any]]]:
    """The bag's live claims on each directional side, as the conflicts tool shows them."""
    sides: dict[str, list[dict[str, Any]]] = {polarity: [] for polarity in DIRECTIONAL}
    for deposit in bag.deposits:
        if deposit.state == "live" and deposit.polarity in sides:
            sides[deposit.polarity].append({
                "id": deposit.id, "content": deposit.content, "evidence_grade": deposit.evidence_grade,
                "created_at": deposit.to_dict()["created_at"], "author": deposit.author,
            })  # fmt: skip
    return sides


def bag_url(dashboard: str, user_id: str, bag_id: str) -> str:
    """The dashboard page where a person reads and resolves one bag."""
    return f"{dashboard}/owners/{quote(user_id, safe='')}/bags/{quote(bag_id, safe='')}/"


def facets_text(bag: Bag) -> str:
    """A bag's facets as `model=…, env=…`, or `no facets`."""
    return ", ".join(f"{k}={v}" for k, v in bag.scope.to_dict().items() if v is not None) or "no facets"


def conflict_item(bag: Bag, dashboard: str) -> tuple[dict[str, Any], list[str]]:
    """One bag in conflict as the conflicts tool answers it: its structured item and its text lines.

    Both point at the dashboard page that resolves it.
    """
    sides = live_sides(bag)
    url = bag_url(dashboard, bag.user_id, bag.bag_id)
    item = {
        "bag_id": bag.bag_id, "resolved": bag.resolved, "scope": bag.scope.to_dict(),
        "counts": dict(bag.counts), **sides, "resolve_url": url,
    }  # fmt: skip
    partly = "; partly corrected already" if bag.resolved else ""
    lines = [f"- bag {bag.bag_id} ({facets_text(bag)}{partly}): resolve at {url}"]
    for polarity, claims in sides.items():
        lines += [f"  {polarity}: {claim['content']}" for claim in claims]
    return item, lines


def conflicts_plan(user_id: str, *, limit: int, dashboard: str) -> Plan[tuple[str, dict[str, Any]]]:
    """The owner's open conflicts with each side's live claims: (text, structured content).

    Two steps: the page of bags in conflict, then every one of them at once.
    """
    (page,) = yield [ops.bags(user_id, conflict=True, limit=limit)]
    assert isinstance(page, BagPage)
    bags: list[Bag] = (yield [ops.bag(user_id, summary.bag_id) for summary in page]) if page.items else []
    items: list[dict[str, Any]] = []
    lines = [f"{page.total} bag{'s' if page.total != 1 else ''} in conflict:"]
    for bag in bags:
        item, bag_lines = conflict_item(bag, dashboard)
        items.append(item)
        lines += bag_lines
    structured = {"kind": "conflicts", "user_id": user_id, "total": page.total, "items": items}
    return "\n".join(lines), structured


def stored_line(result_deposit: Deposit, *, replay: bool) -> str:
    """What add answers in text: stored (or a replay) and the deposit's line."""
    return f"{'Already stored (a replay)' if replay else 'Stored'}: {deposit_line(result_deposit)}"
