"""`atlaso mcp`: Atlaso's memory as MCP tools, for Claude Desktop, Claude Code, Cursor and others.

Built on the official `mcp` SDK (`pip install "atlaso[mcp]"`). Each tool calls the HTTP API
through `AsyncMemory` and answers twice: structured content (the API's wire object, each recall
hit's deposit written once, described by an output schema) and a short text for the model (`explain()` for recall and health). A
failure, from the owner's name to the server's answer, is a tool error carrying the message and
what would succeed, never a success and never a crash; an argument the tool does not take is
refused by name.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import os
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import quote

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from atlaso._async_client import AsyncMemory, AsyncUserHandle
from atlaso._core import VERSION
from atlaso._errors import (
    HOW_TO_GET_A_KEY,
    MAKE_A_KEY,
    AtlasoError,
    AuthenticationError,
    DepositRejectedError,
    IdempotencyKeyConflict,
    InputValidationError,
    MissingContradictsError,
)
from atlaso._mcp_shapes import (
    AddManyResultOut,
    AddResultOut,
    BulkItemIn,
    ConflictsOut,
    DepositOut,
    DepositPageOut,
    DiagnosticsOut,
    EvidenceGrade,
    PeekOut,
    Polarity,
    RetractResultOut,
    ScopeFilterIn,
    ScopeIn,
    SearchResultsOut,
)
from atlaso._types import Bag, Deposit, SearchResults

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


def _prose(text: str) -> str:
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
person should resolve."""

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
ScopeArg = Annotated[ScopeIn | None, Field(description=SCOPE_HELP)]
FilterArg = Annotated[ScopeFilterIn | None, Field(description=FILTER_HELP)]
PolarityArg = Annotated[Polarity, Field(description=POLARITY_HELP)]
GradeArg = Annotated[EvidenceGrade, Field(description=GRADE_HELP)]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
KEYED_WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
DESTRUCTIVE = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)


def teach(error: AtlasoError) -> str:
    """The API's message, and what the model could do that would succeed."""
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
            return (
                "This MCP server has no Atlaso API key: set ATLASO_API_KEY in the env of the atlaso "
                "entry of the host's MCP configuration, then restart the server. An operator makes a "
                f"key in the Atlaso checkout with `{MAKE_A_KEY}` (the secret is its last line)."
            )
        return f"Atlaso refused this server's API key (unknown or revoked): {error.message}"
    return error.message


def _taught(fn: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """`fn` answering any client error, the owner's name's included, as a tool error that teaches.

    Without this a refusal raised outside the API call (the owner's name, checked by `for_user`)
    reached the SDK as a crash: "Error executing tool add" and a traceback on the server.
    """

    @functools.wraps(fn)
    async def tool(*args: Any, **kwargs: Any) -> T:
        try:
            return await fn(*args, **kwargs)
        except AtlasoError as error:
            raise ToolError(teach(error)) from error

    return tool


def _unknown_arguments(tool: str, unknown: list[str], known: list[str]) -> str:
    """What a call named that `tool` does not take, the likely meant name, and what it takes."""
    named = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1)
        named.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
    plural = "s" if len(unknown) > 1 else ""
    return (
        f"unknown argument{plural} {', '.join(named)}: {tool} takes {', '.join(known)}. "
        "Nothing was done; call it again with these names."
    )


class _StrictTool(Tool):
    """A tool that refuses, by name, an argument its input schema does not have.

    The SDK's argument models ignore unknown keys, so a misspelt optional argument (`limt`)
    would vanish and the call succeed with the default.
    """

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        known = list(self.parameters["properties"])
        unknown = [name for name in arguments if name not in known]
        if unknown:
            raise ToolError(
                f"Error executing tool {self.name}: {_unknown_arguments(self.name, unknown, known)}"
            )
        return await super().run(arguments, context, convert_result=convert_result)


def _strict_tool(fn: Callable[..., Any], annotations: ToolAnnotations) -> Tool:
    """`fn` as a tool whose schema says, and whose calls enforce, that it takes nothing else."""
    # from_function builds the class it is called on: a _StrictTool.
    tool = _StrictTool.from_function(
        _taught(fn), description=_prose(fn.__doc__ or ""), annotations=annotations
    )
    tool.parameters["additionalProperties"] = False
    return tool


def _answer(text: str, structured: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


# What a recall hit keeps of its deposit beside the fields the hit already carries: who wrote it,
# where it came from and what it corrects. `get` reads the rest.
_HIT_PROVENANCE = ("author", "author_role", "channel", "artifact_refs", "contradicts")


def _recall_structured(results: SearchResults) -> dict[str, Any]:
    """Recall's wire object with each hit's deposit written once.

    The API's hit repeats its deposit whole (`deposit`) beside the id, content, polarity, grade,
    scope and tags it already lists: half of what a model would read twice.
    """
    answer = results.to_dict()
    for hit in answer["items"]:
        deposit = hit.pop("deposit")
        hit.update({name: deposit[name] for name in _HIT_PROVENANCE})
    return answer


def _deposit_line(deposit: Deposit) -> str:
    return f"{deposit.id}: {deposit.polarity}/{deposit.evidence_grade}: {deposit.content}"


def _recall_text(results: SearchResults) -> str:
    lines = [results.explain()]
    for hit in results:
        flag = "conflict" if hit.has_disagreement else ("confident" if hit.is_confident else "not confident")
        lines.append(f"- [{flag}] {hit.polarity}/{hit.evidence_grade} {hit.id}: {hit.content}")
    return "\n".join(lines)


def _owner_help(default_user: str | None) -> str:
    """The owner argument's description: it tells the truth about this server, its default owner
    or that it has none."""
    if default_user:
        return f"{USER_ID_HELP} Leave it out for this server's default owner, {default_user!r}."
    return f"{USER_ID_HELP} Required: this server has no default owner (ATLASO_USER is unset)."


def _live_sides(bag: Bag) -> dict[str, list[dict[str, Any]]]:
    """The bag's live claims on each directional side, as the conflicts tool shows them."""
    sides: dict[str, list[dict[str, Any]]] = {"positive": [], "negative": [], "cautionary": []}
    for deposit in bag.deposits:
        if deposit.state == "live" and deposit.polarity in sides:
            sides[deposit.polarity].append({
                "id": deposit.id, "content": deposit.content, "evidence_grade": deposit.evidence_grade,
                "created_at": deposit.to_dict()["created_at"], "author": deposit.author,
            })  # fmt: skip
    return sides


def _conflict(bag: Bag, dashboard: str) -> tuple[dict[str, Any], list[str]]:
    """One bag in conflict as the conflicts tool answers it: its structured item and its lines of
    text, both pointing at the dashboard page that resolves it."""
    sides = _live_sides(bag)
    url = f"{dashboard}/owners/{quote(bag.user_id, safe='')}/bags/{quote(bag.bag_id, safe='')}/"
    item = {
        "bag_id": bag.bag_id, "resolved": bag.resolved, "scope": bag.scope.to_dict(),
        "counts": dict(bag.counts), **sides, "resolve_url": url,
    }  # fmt: skip
    facets = ", ".join(f"{k}={v}" for k, v in bag.scope.to_dict().items() if v is not None) or "no facets"
    partly = "; partly corrected already" if bag.resolved else ""
    lines = [f"- bag {bag.bag_id} ({facets}{partly}): resolve at {url}"]
    for polarity, claims in sides.items():
        lines += [f"  {polarity}: {claim['content']}" for claim in claims]
    return item, lines


class _Toolbox:
    """What the tools of one server share: its memory, its default owner and its dashboard, and
    `tool`, which makes a tool with the owner argument described for this server."""

    def __init__(self, memory: AsyncMemory, default_user: str | None) -> None:
        self.memory = memory
        self.default_user = default_user
        self.dashboard = memory.settings.base_url
        self.tools: list[Tool] = []
        self._user_id_arg: Any = Annotated[str | None, Field(description=_owner_help(default_user))]

    def tool(self, annotations: ToolAnnotations) -> Callable[[F], F]:
        def register(fn: F) -> F:
            fn.__annotations__["user_id"] = self._user_id_arg
            self.tools.append(_strict_tool(fn, annotations))
            return fn

        return register

    def owner(self, user_id: str | None) -> str:
        chosen = user_id or self.default_user
        if not chosen:
            raise ToolError(
                "user_id is required: name the memory owner (e.g. 'alice'), or start the server "
                "with ATLASO_USER set to a default owner."
            )
        return chosen

    def user(self, user_id: str | None) -> AsyncUserHandle:
        """The handle of the owner a call names, or of the default owner.

        The client's own check raises an AtlasoError, which the tool's error path teaches; a
        `validate_user_id` given to the client may raise anything, and its refusal is the
        caller's to read too, not a crash.
        """
        owner = self.owner(user_id)
        try:
            return self.memory.for_user(owner)
        except AtlasoError:
            raise
        except Exception as error:
            raise ToolError(f"user_id {owner!r} is refused: {error}") from error


def _add_tool(box: _Toolbox) -> None:
    @box.tool(WRITE)
    async def add(
        content: Annotated[str, Field(description="The claim, in plain words (1..8000 characters).")],
        polarity: PolarityArg = "open",
        evidence_grade: GradeArg = "anecdotal",
        scope: ScopeArg = None,
        tags: Annotated[list[str] | None, Field(description="Free-form labels.")] = None,
        artifact_refs: Annotated[
            list[str] | None,
            Field(description="Links to logs, runs or files backing the claim (provenance)."),
        ] = None,
        contradicts: Annotated[
            list[str] | None, Field(description="Ids of earlier deposits this claim supersedes.")
        ] = None,
        author: Annotated[str | None, Field(description="Who wrote it.")] = None,
        author_role: Annotated[str | None, Field(description="The author's role, e.g. redteam.")] = None,
        task_id: Annotated[str | None, Field(description="The task this came from.")] = None,
        idempotency_key: Annotated[
            str | None, Field(description="Same key and same claim within 24 h: a replay, stored once.")
        ] = None,
        user_id: str | None = None,
    ) -> Annotated[CallToolResult, AddResultOut]:
        """Store one claim the agent learned about the owner. A write gate refuses weak claims
        (a broad positive claim needs replicated evidence; negative and cautionary ones need
        provenance or a narrow scope); the error says what would pass. Claims are immutable:
        to correct one, use contradict instead."""
        result = await box.user(user_id).add(
            content, polarity=polarity, evidence_grade=evidence_grade, scope=scope, tags=tags,
            artifact_refs=artifact_refs, contradicts=contradicts, author=author, author_role=author_role,
            task_id=task_id, idempotency_key=idempotency_key,
        )  # fmt: skip
        verb = "Already stored (a replay)" if result.is_idempotent_replay else "Stored"
        return _answer(f"{verb}: {_deposit_line(result.deposit)}", result.to_dict())


def _recall_tool(box: _Toolbox) -> None:
    @box.tool(READ_ONLY)
    async def recall(
        query: Annotated[
            str, Field(description="What to look for: keywords, or a question in your own words.")
        ],
        limit: Annotated[int, Field(ge=1, le=1000, description="How many hits to return.")] = 10,
        scope: FilterArg = None,
        include_superseded: Annotated[
            bool, Field(description="Also return claims a correction superseded (for audit).")
        ] = False,
        mode: Annotated[
            Literal["words", "meaning", "hybrid"] | None,
            Field(
                description="How to find claims. Leave it out (the server uses hybrid when it can) or "
                "hybrid for most questions. words: exact terms the claim must share (a name, an id, "
                "an error code). meaning: the question asked in other words than the claim's "
                '("what does she eat?" finds "I\'m vegan"). Each hit says matched_by.'
            ),
        ] = None,
        user_id: str | None = None,
    ) -> Annotated[CallToolResult, SearchResultsOut]:
        """Search the owner's memory before answering from it. Each hit carries its bag's flags:
        is_confident (several claims agree, none disagree: safe to rely on), has_disagreement
        (claims in the same scope conflict: say so, do not pick a side), is_thin_evidence (only
        one claim). The top-level has_disagreement covers every matching bag, beyond limit. Each
        hit is the claim with who wrote it (author, channel) and its evidence (artifact_refs);
        get reads the whole deposit."""
        results = await box.user(user_id).recall(
            query, limit=limit, scope=scope, include_superseded=include_superseded, mode=mode
        )
        return _answer(_recall_text(results), _recall_structured(results))


def _get_tool(box: _Toolbox) -> None:
    @box.tool(READ_ONLY)
    async def get(
        deposit_id: Annotated[str, Field(description="The deposit's id, from recall or list_recent.")],
        user_id: str | None = None,
    ) -> Annotated[CallToolResult, DepositOut]:
        """Read one deposit with its audit state: superseded_by (the corrections that replaced it)
        and retracted."""
        deposit = await box.user(user_id).get(deposit_id)
        state = " (retracted)" if deposit.retracted else (" (superseded)" if deposit.superseded_by else "")
        return _answer(_deposit_line(deposit) + state, deposit.to_dict())


def _list_recent_tool(box: _Toolbox) -> None:
    @box.tool(READ_ONLY)
    async def list_recent(
        limit: Annotated[int, Field(ge=1, le=200, description="How many deposits.")] = 20,
        offset: Annotated[int, Field(ge=0, description="How many of the newest to skip.")] = 0,
        include_retracted: Annotated[bool, Field(description="Also list retracted deposits.")] = False,
        user_id: str | None = None,
    ) -> Annotated[CallToolResult, DepositPageOut]:
        """List the owner's deposits, newest first, to browse what the memory holds. To find
        claims about something, use recall instead; page through with offset."""
        page = await box.user(user_id).list_recent(
            limit=limit, offset=offset, include_retracted=include_retracted
        )
        lines = [f"{len(page)} of {page.total} deposits (newest first, from {page.offset}):"]
        lines += [f"- {_deposit_line(d)}" for d in page]
        return _answer("\n".join(lines), page.to_dict())


def _contradict_tool(box: _Toolbox) -> None:
    @box.tool(WRITE)
    async def contradict(
        content: Annotated[str, Field(description="The corrected claim.")],
        contradicts: Annotated[
            list[str], Field(min_length=1, description="Ids of the deposits it corrects.")
        ],
        reason: Annotated[str, Field(description="Why the old claims no longer hold (1..2000 characters).")],
        polarity: PolarityArg = "open",
        evidence_grade: GradeArg = "anecdotal",
        scope: Annotated[
            ScopeIn | None,
            Field(description=SCOPE_HELP + " Leave it out to take the first corrected deposit's scope."),
        ] = None,
        tags: Annotated[list[str] | None, Field(description="Free-form labels.")] = None,
        artifact_refs: Annotated[
            list[str] | None, Field(description="Provenance for the correction.")
        ] = None,
        idempotency_key: Annotated[str | None, Field(description="Makes a retry a replay.")] = None,
        user_id: str | None = None,
    ) -> Annotated[CallToolResult, AddResultOut]:
        """Correct earlier claims: writes a new deposit (through the gate) that supersedes them.
        The old ones stay readable for audit but stop counting. Use this, not add, when a claim
        turned out wrong or outdated."""
        result = await box.user(user_id).contradict(
            content, contradicts, reason=reason, polarity=polarity, evidence_grade=evidence_grade,
            scope=scope, tags=tags, artifact_refs=artifact_refs, idempotency_key=idempotency_key,
        )  # fmt: skip
        return _answer(
            f"Stored the correction {result.id}; it supersedes {', '.join(contradicts)}", result.to_dict()
        )


def _retract_tool(box: _Toolbox) -> None:
    @box.tool(DESTRUCTIVE)
    async def retract(
        deposit_id: Annotated[str, Field(description="The deposit to retract.")],
        reason: Annotated[str, Field(description="Why it is withdrawn.")],
        mode: Annotated[
            Literal["soft", "hard"],
            Field(
                description="soft: mark it retracted, keep it for audit (the usual choice); hard: erase "
                "it for good (GDPR; needs a key with the erase permission)."
            ),
        ] = "soft",
        user_id: str | None = None,
    ) -> Annotated[CallToolResult, RetractResultOut]:
        """Withdraw a claim that should never have been stored. To replace a claim with a better
        one, use contradict instead. mode='hard' erases it and cannot be undone."""
        result = await box.user(user_id).retract(deposit_id, reason=reason, hard_delete=mode == "hard")
        verb = "Erased" if result.mode == "hard" else "Retracted (kept for audit)"
        return _answer(f"{verb}: {result.deposit_id}", result.to_dict())


def _health_tool(box: _Toolbox) -> None:
    @box.tool(READ_ONLY)
    async def health(
        window_days: Annotated[int, Field(ge=1, le=365, description="The period the pillars cover.")] = 30,
        user_id: str | None = None,
    ) -> Annotated[CallToolResult, DiagnosticsOut]:
        """How trustworthy the owner's memory is: the Field Maturity Index (0-100) and its four
        pillars (coverage: searches that found a confident answer; precision: agreement inside
        bags; resolution: conflicts resolved; density: bags with more than one claim)."""
        diagnostics = await box.user(user_id).health(window_days=window_days)
        return _answer(diagnostics.explain(), diagnostics.to_dict())


def _peek_tool(box: _Toolbox) -> None:
    @box.tool(READ_ONLY)
    async def peek(
        limit: Annotated[int, Field(ge=1, le=200, description="How many of the newest live deposits.")] = 10,
        user_id: str | None = None,
    ) -> Annotated[CallToolResult, PeekOut]:
        """A quick look at the owner's memory: the newest live claims, how many there are, the FMI,
        and whether a recent bag is in conflict. Use it at the start of a conversation."""
        view = await box.user(user_id).peek(limit=limit)
        conflict = "; a recent bag is in conflict" if view.has_recent_disagreements else ""
        lines = [f"{view.total_count} live deposits, FMI {view.fmi}{conflict}. Newest:"]
        lines += [f"- {_deposit_line(d)}" for d in view]
        return _answer("\n".join(lines), view.to_dict())


def _add_many_tool(box: _Toolbox) -> None:
    @box.tool(KEYED_WRITE)
    async def add_many(
        items: Annotated[
            list[BulkItemIn],
            Field(min_length=1, description="The claims, each with its own idempotency_key."),
        ],
        on_gate_reject: Annotated[
            Literal["skip", "abort"],
            Field(
                description="skip: store every item that passes and report the rest; abort: store nothing if one fails."
            ),
        ] = "skip",
        user_id: str | None = None,
    ) -> Annotated[CallToolResult, AddManyResultOut]:
        """Import many claims at once. Each item needs an idempotency_key, so sending the batch
        again after a failure stores nothing twice (replays come back as duplicates)."""
        result = await box.user(user_id).add_many(list(items), on_gate_reject=on_gate_reject)
        text = (
            f"{len(result.committed)} stored, {len(result.duplicates)} replays, {len(result.failed)} rejected"
        )
        text += "".join(f"\n- item {r.index}: {r.error}" for r in result.failed)
        return _answer(text, result.to_dict())


def _conflicts_tool(box: _Toolbox) -> None:
    @box.tool(READ_ONLY)
    async def conflicts(
        limit: Annotated[int, Field(ge=1, le=50, description="How many conflict bags.")] = 10,
        user_id: str | None = None,
    ) -> Annotated[CallToolResult, ConflictsOut]:
        """List the owner's conflicts: bags whose live claims still disagree, with each side's
        claims and the dashboard page where a person resolves it. Tell the user about them
        rather than resolving them yourself."""
        handle = box.user(user_id)
        page = await handle.bags(conflict=True, limit=limit)
        items: list[dict[str, Any]] = []
        lines = [f"{page.total} bag{'s' if page.total != 1 else ''} in conflict:"]
        for summary in page:
            item, bag_lines = _conflict(await handle.bag(summary.bag_id), box.dashboard)
            items.append(item)
            lines += bag_lines
        structured = {"kind": "conflicts", "user_id": handle.user_id, "total": page.total, "items": items}
        return _answer("\n".join(lines), structured)


# Registered in this order, which is the order the host lists them in.
_TOOLS: tuple[Callable[[_Toolbox], None], ...] = (
    _add_tool,
    _recall_tool,
    _get_tool,
    _list_recent_tool,
    _contradict_tool,
    _retract_tool,
    _health_tool,
    _peek_tool,
    _add_many_tool,
    _conflicts_tool,
)


def build_server(
    memory: AsyncMemory | None = None, *, default_user: str | None = None, name: str = "atlaso"
) -> MCPServer:
    """The MCP server over `memory` (by default an AsyncMemory from the environment)."""
    memory = memory or AsyncMemory()
    default_user = default_user if default_user is not None else (os.environ.get("ATLASO_USER") or None)
    box = _Toolbox(memory, default_user)
    for register in _TOOLS:
        register(box)
    # WARNING: on stdio, stderr is the host's log; every request at INFO would drown what matters.
    return MCPServer(
        name, instructions=_prose(INSTRUCTIONS), version=VERSION, log_level="WARNING", tools=box.tools
    )


def _listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to `host`:`port` (0: any free port) and listening, before anything is said."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family)


def _serve_http(server: MCPServer, host: str, port: int) -> None:
    """Serve streamable HTTP at /mcp, saying on stderr where once the port is bound.

    At the WARNING level uvicorn says nothing when it starts, and stdout is not ours to write
    on, so the address (the real port, when 0 asked for any) is printed here, after the bind
    that could fail.
    """
    import uvicorn

    sock = _listening_socket(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    print(
        f"atlaso mcp: serving streamable HTTP at http://{shown}:{bound}/mcp (Ctrl-C stops it)",
        file=sys.stderr,
        flush=True,
    )
    app = server.streamable_http_app(host=host)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


def serve(*, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8765) -> None:
    """Run the server until the host closes it (stdio) or it is stopped (streamable HTTP)."""
    memory = AsyncMemory()
    if memory.settings.api_key is None:
        print(
            f"atlaso mcp: warning: {HOW_TO_GET_A_KEY}. Every tool will answer an error until then.",
            file=sys.stderr,
        )
    server = build_server(memory)
    if transport == "streamable-http":
        _serve_http(server, host, port)
    else:
        server.run("stdio")
