"""`atlaso mcp`: Atlaso's memory as MCP tools, resources and prompts, for agent hosts.

For Claude Desktop, Claude Code, Cursor, the OpenAI Agents SDK and others.

Built on the official `mcp` SDK (`pip install "atlaso[mcp]"`). Each tool calls the HTTP API
through `AsyncMemory` and answers twice: structured content (the API's wire object, each recall
hit's deposit written once, described by an output schema) and a short text for the model
(`explain()` for recall and health). A failure, from the owner's name to the server's answer, is
a tool error carrying the message and what would succeed, never a success and never a crash; an
argument the tool does not take is refused by name. `settle` asks the person which side of a
conflict holds, where the host can ask (MCP elicitation), and otherwise answers the dashboard
page where a person settles it. Over streamable HTTP each request's `Authorization: Bearer`
key is the one its calls are made with, so several agents with their own keys share one server.
"""

from __future__ import annotations

import difflib
import functools
import json
import os
import socket
import sys
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, Resource, TextContent, ToolAnnotations
from pydantic import BaseModel, Field, create_model

from atlaso._agent_tools import (
    DESCRIPTIONS,
    DIRECTIONAL,
    FILTER_HELP,
    GRADE_HELP,
    INSTRUCTIONS,
    POLARITY_HELP,
    SCOPE_HELP,
    USER_ID_HELP,
    bag_url,
    conflicts_plan,
    deposit_line,
    facets_text,
    live_sides,
    prose,
    recall_structured,
    recall_text,
    stored_line,
    teach,
)
from atlaso._async_client import AsyncMemory, AsyncUserHandle
from atlaso._core import VERSION
from atlaso._errors import HOW_TO_GET_A_KEY, MAKE_A_KEY, AtlasoError
from atlaso._mcp_shapes import (
    AddManyResultOut,
    AddResultOut,
    BulkItemIn,
    ConflictsOut,
    DepositOut,
    DepositPageOut,
    DiagnosticsOut,
    PeekOut,
    RetractResultOut,
    ScopeFilterIn,
    ScopeIn,
    SearchResultsOut,
    SettleOut,
)
from atlaso._plan import adrive
from atlaso._types import Bag, EvidenceGrade, OnGateReject, Polarity, RecallMode, RetractMode, Scope

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

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

# Callers' keys whose clients (and connections) are kept; the least recently used goes first.
MAX_CALLER_KEYS = 32


class _Keys:
    """The memory each request is served with, so one server serves several agents, each as itself.

    Over HTTP, a request's own `Authorization: Bearer` key's; else the server's (ATLASO_API_KEY).
    """

    def __init__(self, memory: AsyncMemory) -> None:
        self.memory = memory
        self._callers: OrderedDict[str, AsyncMemory] = OrderedDict()

    @staticmethod
    def sent_key(ctx: Context | None) -> str | None:
        """The key a request carried in its Authorization header (None: it carried none)."""
        headers: Mapping[str, str] | None = ctx.headers if ctx is not None else None
        if not headers:
            return None
        value = headers.get("authorization")
        if value is None:
            return None
        scheme, _, key = value.strip().partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise ToolError(
                "the Authorization header must be 'Bearer <Atlaso API key>'; make a key in the Atlaso "
                f"checkout with `{MAKE_A_KEY}` (the secret is its last line)"
            )
        return key.strip()

    async def memory_for(self, ctx: Context | None) -> AsyncMemory:
        key = self.sent_key(ctx)
        if key is None:
            return self.memory
        memory = self._callers.get(key)
        if memory is None:
            settings = self.memory.settings
            memory = AsyncMemory(
                api_key=key,
                base_url=settings.base_url,
                timeout=settings.timeout,
                max_retries=settings.max_retries,
                validate_user_id=settings.validate_user_id,
            )
            self._callers[key] = memory
            while len(self._callers) > MAX_CALLER_KEYS:
                await self._callers.popitem(last=False)[1].aclose()
        self._callers.move_to_end(key)
        return memory

    def no_key(self, ctx: Context | None) -> str:
        """What a call without any key is told, on the transport it came by."""
        if ctx is not None and ctx.headers is not None:
            return (
                "No Atlaso API key: send yours as 'Authorization: Bearer <key>' (the host's MCP "
                "configuration sets headers), or start this server with ATLASO_API_KEY. An operator "
                f"makes a key in the Atlaso checkout with `{MAKE_A_KEY}` (the secret is its last line)."
            )
        return (
            "This MCP server has no Atlaso API key: set ATLASO_API_KEY in the env of the atlaso "
            "entry of the host's MCP configuration, then restart the server. An operator makes a "
            f"key in the Atlaso checkout with `{MAKE_A_KEY}` (the secret is its last line)."
        )

    def refused_key(self, ctx: Context | None) -> str:
        if self.sent_key(ctx) is not None:
            return "Atlaso refused the API key this request sent in its Authorization header (unknown or revoked)"
        return "Atlaso refused this server's API key (unknown or revoked)"

    def teach(self, error: AtlasoError, ctx: Context | None) -> str:
        return teach(error, no_key=self.no_key(ctx), refused_key=self.refused_key(ctx))


def _context_of(kwargs: Mapping[str, Any]) -> Context | None:
    found = kwargs.get("ctx")
    return found if isinstance(found, Context) else None


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


def _answer(text: str, structured: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def _owner_help(default_user: str | None) -> str:
    """The owner argument's description: this server's default owner, or that it has none."""
    if default_user:
        return f"{USER_ID_HELP} Leave it out for this server's default owner, {default_user!r}."
    return f"{USER_ID_HELP} Required: this server has no default owner (ATLASO_USER is unset)."


class _Toolbox:
    """What the tools of one server share: its keys, its default owner and its dashboard.

    `tool` makes a tool with the owner argument described for this server.
    """

    def __init__(self, memory: AsyncMemory, default_user: str | None) -> None:
        self.keys = _Keys(memory)
        self.default_user = default_user
        self.dashboard = memory.settings.base_url
        self.tools: list[Tool] = []
        self._user_id_arg: Any = Annotated[str | None, Field(description=_owner_help(default_user))]

    def taught(self, fn: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
        """`fn` answering any client error, the owner's name's included, as a tool error that teaches.

        Without this a refusal raised outside the API call (the owner's name, checked by
        `for_user`) reached the SDK as a crash: "Error executing tool add" and a traceback.
        """

        @functools.wraps(fn)
        async def tool(*args: Any, **kwargs: Any) -> T:
            try:
                return await fn(*args, **kwargs)
            except AtlasoError as error:
                raise ToolError(self.keys.teach(error, _context_of(kwargs))) from error

        return tool

    def tool(self, annotations: ToolAnnotations) -> Callable[[F], F]:
        def register(fn: F) -> F:
            fn.__annotations__["user_id"] = self._user_id_arg
            # from_function builds the class it is called on: a _StrictTool.
            tool = _StrictTool.from_function(
                self.taught(fn), description=DESCRIPTIONS[fn.__name__], annotations=annotations
            )
            tool.parameters["additionalProperties"] = False
            self.tools.append(tool)
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

    async def user(self, user_id: str | None, ctx: Context | None) -> AsyncUserHandle:
        """The handle of the owner a call names (or the default owner), with the caller's key.

        The client's own check raises an AtlasoError, which the tool's error path teaches; a
        `validate_user_id` given to the client may raise anything, and its refusal is the
        caller's to read too, not a crash.
        """
        owner = self.owner(user_id)
        memory = await self.keys.memory_for(ctx)
        try:
            return memory.for_user(owner)
        except AtlasoError:
            raise
        except Exception as error:
            raise ToolError(f"user_id {owner!r} is refused: {error}") from error

    async def changed(self, ctx: Context, owner: str) -> None:
        """Tell listening hosts that what the owner's resources answer has changed."""
        for name in ("conflicts", "health"):
            await ctx.notify_resource_updated(f"atlaso://{owner}/{name}")


def _add_tool(box: _Toolbox) -> None:
    @box.tool(WRITE)
    async def add(
        ctx: Context,
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
        """The add tool."""
        handle = await box.user(user_id, ctx)
        result = await handle.add(
            content, polarity=polarity, evidence_grade=evidence_grade, scope=scope, tags=tags,
            artifact_refs=artifact_refs, contradicts=contradicts, author=author, author_role=author_role,
            task_id=task_id, idempotency_key=idempotency_key,
        )  # fmt: skip
        await box.changed(ctx, handle.user_id)
        return _answer(stored_line(result.deposit, replay=result.is_idempotent_replay), result.to_dict())


def _recall_tool(box: _Toolbox) -> None:
    @box.tool(READ_ONLY)
    async def recall(
        ctx: Context,
        query: Annotated[
            str, Field(description="What to look for: keywords, or a question in your own words.")
        ],
        limit: Annotated[int, Field(ge=1, le=1000, description="How many hits to return.")] = 10,
        scope: FilterArg = None,
        include_superseded: Annotated[
            bool, Field(description="Also return claims a correction superseded (for audit).")
        ] = False,
        mode: Annotated[
            RecallMode | None,
            Field(
                description="How to find claims. Leave it out (the server uses hybrid when it can) or "
                "hybrid for most questions. words: exact terms the claim must share (a name, an id, "
                "an error code). meaning: the question asked in other words than the claim's "
                '("what does she eat?" finds "I\'m vegan"). Each hit says matched_by.'
            ),
        ] = None,
        user_id: str | None = None,
    ) -> Annotated[CallToolResult, SearchResultsOut]:
        """The recall tool."""
        handle = await box.user(user_id, ctx)
        results = await handle.recall(
            query, limit=limit, scope=scope, include_superseded=include_superseded, mode=mode
        )
        return _answer(recall_text(results), recall_structured(results))


def _get_tool(box: _Toolbox) -> None:
    @box.tool(READ_ONLY)
    async def get(
        ctx: Context,
        deposit_id: Annotated[str, Field(description="The deposit's id, from recall or list_recent.")],
        user_id: str | None = None,
    ) -> Annotated[CallToolResult, DepositOut]:
        """The get tool."""
        deposit = await (await box.user(user_id, ctx)).get(deposit_id)
        state = " (retracted)" if deposit.retracted else (" (superseded)" if deposit.superseded_by else "")
        return _answer(deposit_line(deposit) + state, deposit.to_dict())


def _list_recent_tool(box: _Toolbox) -> None:
    @box.tool(READ_ONLY)
    async def list_recent(
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=200, description="How many deposits.")] = 20,
        offset: Annotated[int, Field(ge=0, description="How many of the newest to skip.")] = 0,
        include_retracted: Annotated[bool, Field(description="Also list retracted deposits.")] = False,
        user_id: str | None = None,
    ) -> Annotated[CallToolResult, DepositPageOut]:
        """The list_recent tool."""
        page = await (await box.user(user_id, ctx)).list_recent(
            limit=limit, offset=offset, include_retracted=include_retracted
        )
        lines = [f"{len(page)} of {page.total} deposits (newest first, from {page.offset}):"]
        lines += [f"- {deposit_line(d)}" for d in page]
        return _answer("\n".join(lines), page.to_dict())


def _contradict_tool(box: _Toolbox) -> None:
    @box.tool(WRITE)
    async def contradict(
        ctx: Context,
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
        """The contradict tool."""
        handle = await box.user(user_id, ctx)
        result = await handle.contradict(
            content, contradicts, reason=reason, polarity=polarity, evidence_grade=evidence_grade,
            scope=scope, tags=tags, artifact_refs=artifact_refs, idempotency_key=idempotency_key,
        )  # fmt: skip
        await box.changed(ctx, handle.user_id)
        return _answer(
            f"Stored the correction {result.id}; it supersedes {', '.join(contradicts)}", result.to_dict()
        )


def _retract_tool(box: _Toolbox) -> None:
    @box.tool(DESTRUCTIVE)
    async def retract(
        ctx: Context,
        deposit_id: Annotated[str, Field(description="The deposit to retract.")],
        reason: Annotated[str, Field(description="Why it is withdrawn.")],
        mode: Annotated[
            RetractMode,
            Field(
                description="soft: mark it retracted, keep it for audit (the usual choice); hard: erase "
                "it for good (GDPR; needs a key with the erase permission)."
            ),
        ] = "soft",
        user_id: str | None = None,
    ) -> Annotated[CallToolResult, RetractResultOut]:
        """The retract tool."""
        handle = await box.user(user_id, ctx)
        result = await handle.retract(deposit_id, reason=reason, hard_delete=mode == "hard")
        await box.changed(ctx, handle.user_id)
        verb = "Erased" if result.mode == "hard" else "Retracted (kept for audit)"
        return _answer(f"{verb}: {result.deposit_id}", result.to_dict())


def _health_tool(box: _Toolbox) -> None:
    @box.tool(READ_ONLY)
    async def health(
        ctx: Context,
        window_days: Annotated[int, Field(ge=1, le=365, description="The period the pillars cover.")] = 30,
        user_id: str | None = None,
    ) -> Annotated[CallToolResult, DiagnosticsOut]:
        """The health tool."""
        diagnostics = await (await box.user(user_id, ctx)).health(window_days=window_days)
        return _answer(diagnostics.explain(), diagnostics.to_dict())


def _peek_tool(box: _Toolbox) -> None:
    @box.tool(READ_ONLY)
    async def peek(
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=200, description="How many of the newest live deposits.")] = 10,
        user_id: str | None = None,
    ) -> Annotated[CallToolResult, PeekOut]:
        """The peek tool."""
        view = await (await box.user(user_id, ctx)).peek(limit=limit)
        conflict = "; a recent bag is in conflict" if view.has_recent_disagreements else ""
        lines = [f"{view.total_count} live deposits, FMI {view.fmi}{conflict}. Newest:"]
        lines += [f"- {deposit_line(d)}" for d in view]
        return _answer("\n".join(lines), view.to_dict())


def _add_many_tool(box: _Toolbox) -> None:
    @box.tool(KEYED_WRITE)
    async def add_many(
        ctx: Context,
        items: Annotated[
            list[BulkItemIn],
            Field(min_length=1, description="The claims, each with its own idempotency_key."),
        ],
        on_gate_reject: Annotated[
            OnGateReject,
            Field(
                description="skip: store every item that passes and report the rest; abort: store nothing if one fails."
            ),
        ] = "skip",
        user_id: str | None = None,
    ) -> Annotated[CallToolResult, AddManyResultOut]:
        """The add_many tool."""
        handle = await box.user(user_id, ctx)
        result = await handle.add_many(list(items), on_gate_reject=on_gate_reject)
        await box.changed(ctx, handle.user_id)
        text = (
            f"{len(result.committed)} stored, {len(result.duplicates)} replays, {len(result.failed)} rejected"
        )
        text += "".join(f"\n- item {r.index}: {r.error}" for r in result.failed)
        return _answer(text, result.to_dict())


def _conflicts_tool(box: _Toolbox) -> None:
    @box.tool(READ_ONLY)
    async def conflicts(
        ctx: Context,
        limit: Annotated[int, Field(ge=1, le=50, description="How many conflict bags.")] = 10,
        user_id: str | None = None,
    ) -> Annotated[CallToolResult, ConflictsOut]:
        """The conflicts tool."""
        handle = await box.user(user_id, ctx)
        plan = conflicts_plan(handle.user_id, limit=limit, dashboard=box.dashboard)
        text, structured = await adrive(handle._memory, plan)
        return _answer(text, structured)


# ---- settle: the person says which side holds ----------------------------------------------

# A side's claims as the form's choice names them: each claim once, cut to what a form shows.
_CHOICE_CHARS = 240


class _NotAsked(BaseModel):
    """The settle resolver's answer when the host cannot ask the person (no form elicitation)."""

    why: str


def _can_ask(ctx: Context) -> bool:
    """Whether the host said it can show the person a form (MCP form elicitation)."""
    capabilities = ctx.client_capabilities
    elicitation = capabilities.elicitation if capabilities is not None else None
    # A bare `elicitation: {}` (before modes existed) means forms.
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def _choice_title(polarity: str, claims: list[dict[str, Any]]) -> str:
    text = " / ".join(dict.fromkeys(claim["content"] for claim in claims))
    if len(text) > _CHOICE_CHARS:
        text = text[: _CHOICE_CHARS - 1].rstrip() + "…"
    return f"{polarity.capitalize()} holds: {text}"


def _settle_form(sides: dict[str, list[dict[str, Any]]]) -> type[BaseModel]:
    """The form the person fills in: which side holds (each choice naming its claims), and why."""
    present = [polarity for polarity in DIRECTIONAL if sides[polarity]]
    choices = [{"const": p, "title": _choice_title(p, sides[p])} for p in present]

    def titled(schema: dict[str, Any]) -> None:
        # Each choice is shown by its claims (a titled single-select enum), not by a bare polarity.
        schema.pop("enum", None)
        schema["oneOf"] = choices

    holds_type: Any = Literal[tuple(present)]
    return create_model(
        "SettleForm",
        holds=(
            holds_type,
            Field(title="Which side holds?", description="The side that is true.", json_schema_extra=titled),
        ),
        reason=(
            str,
            Field(
                title="Why",
                description="In your words: why this side holds. It is kept as the correction's reason.",
                min_length=1,
                max_length=2000,
            ),
        ),
    )


def _settle_question(user_id: str, bag: Bag, sides: dict[str, list[dict[str, Any]]]) -> str:
    lines = [f"The memory of {user_id} disagrees with itself ({facets_text(bag)}). Which side holds?"]
    for polarity in DIRECTIONAL:
        lines += [f"- {polarity}: {claim['content']}" for claim in sides[polarity]]
    return "\n".join(lines)


def _settled(
    action: str, user_id: str, bag_id: str, url: str, **fields: Any
) -> dict[str, Any]:  # the structured answer of settle, every field present
    return {
        "kind": "settle_result", "action": action, "user_id": user_id, "bag_id": bag_id,
        "resolve_url": url, "holds": None, "reason": None, "correction": None, **fields,
    }  # fmt: skip


async def _bag_in_conflict(box: _Toolbox, ctx: Context, user_id: str | None, bag_id: str) -> tuple[str, Bag]:
    """The owner and the bag to settle, refused as a tool error when it is not a conflict now."""
    try:
        handle = await box.user(user_id, ctx)
        bag = await handle.bag(bag_id)
    except AtlasoError as error:
        raise ToolError(box.keys.teach(error, ctx)) from error
    if not bag.has_disagreement:
        raise ToolError(
            f"bag {bag_id} is not in conflict (its live claims agree): there is nothing to settle. "
            "conflicts lists the bags that are."
        )
    return handle.user_id, bag


# What settle answers when the person does not choose: (action, what they did).
_REFUSALS = {
    "decline": ("declined", "declined to settle it"),
    "cancel": ("cancelled", "dismissed the question"),
}


def _settle_tool(box: _Toolbox) -> None:
    async def ask(bag_id: str, user_id: str | None, ctx: Context) -> Elicit[BaseModel] | _NotAsked:
        """The question for the person, or why it is not asked (the host cannot show a form)."""
        owner, bag = await _bag_in_conflict(box, ctx, user_id, bag_id)
        if not _can_ask(ctx):
            return _NotAsked(why="this host cannot ask the person (it does not support MCP elicitation)")
        sides = live_sides(bag)
        return Elicit(_settle_question(owner, bag, sides), _settle_form(sides))

    async def settle(
        ctx: Context,
        bag_id: Annotated[str, Field(description="The bag in conflict, from conflicts.")],
        answer: Any,
        user_id: str | None = None,
    ) -> Annotated[CallToolResult, SettleOut]:
        """The settle tool."""
        owner = box.owner(user_id)
        url = bag_url(box.dashboard, owner, bag_id)
        if isinstance(answer, AcceptedElicitation) and isinstance(answer.data, _NotAsked):
            text = f"Not settled: {answer.data.why}. A person settles it on the dashboard: {url}"
            return _answer(text, _settled("not_asked", owner, bag_id, url))
        if not isinstance(answer, AcceptedElicitation):
            action, said = _REFUSALS[answer.action]
            text = f"Not settled: the person {said}. Nothing was written; it stays open at {url}"
            return _answer(text, _settled(action, owner, bag_id, url))
        holds, reason = answer.data.holds, answer.data.reason
        owner, bag = await _bag_in_conflict(box, ctx, user_id, bag_id)
        result = await _write_settlement(box, ctx, owner, bag, holds, reason)
        await box.changed(ctx, owner)
        text = (
            f"Settled: the person says the {holds} side holds ({reason}). The correction "
            f"{result['deposit']['id']} supersedes {', '.join(result['deposit']['contradicts'])}."
        )
        return _answer(
            text, _settled("accepted", owner, bag_id, url, holds=holds, reason=reason, correction=result)
        )

    # The person's answer is filled by the SDK (its resolver asks, on either protocol era), never
    # by the model: a real annotation object, as `ask` is local and a string could not name it.
    settle.__annotations__["answer"] = Annotated[ElicitationResult[Any], Resolve(ask)]
    box.tool(WRITE)(settle)


async def _write_settlement(
    box: _Toolbox, ctx: Context, owner: str, bag: Bag, holds: str, reason: str
) -> dict[str, Any]:
    """The correction the person's answer makes: the side that holds, restated once.

    It supersedes every live claim of the other sides, with the person's words as its reason.

    It copies the kept claims' best grade, facets and artifacts, so it passes the gate whenever
    they did, as the dashboard's resolution does; it is written on this caller's key's channel.
    """
    live = [d for d in bag.deposits if d.state == "live" and d.polarity in DIRECTIONAL]
    kept = [d for d in live if d.polarity == holds]
    if not kept:
        raise ToolError(
            f"the {holds} side of bag {bag.bag_id} has no live claim any more: it changed meanwhile"
        )
    grades = ("anecdotal", "observed", "replicated", "verified")
    handle = await box.user(owner, ctx)
    result = await handle.contradict(
        "\n".join(dict.fromkeys(d.content.strip() for d in kept)),
        [d.id for d in live if d.polarity != holds],
        reason=reason,
        polarity=holds,
        evidence_grade=max((d.evidence_grade for d in kept), key=grades.index),
        scope=Scope(**{k: v for k, v in bag.scope.to_dict().items() if k != "note"}),
        artifact_refs=list(dict.fromkeys(ref for d in kept for ref in d.artifact_refs)),
        author_role="person",
    )
    return result.to_dict()


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
    _settle_tool,
)


# ---- Resources and prompts -----------------------------------------------------------------

JSON = "application/json"
RESOURCES = {
    "conflicts": "The owner's open conflicts: each bag whose live claims disagree, each side's claims, "
    "and the dashboard page where a person resolves it.",
    "health": "The owner's Field Maturity Index and its four pillars over the last 30 days, with its verdict.",
}


class _AtlasoServer(MCPServer):
    """The SDK's server, listing the default owner's resources beside the templates for any owner."""

    def __init__(self, *args: Any, default_user: str | None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._default_user = default_user

    async def list_resources(self) -> list[Resource]:
        # Read through the templates, with each request's own key: nothing is registered as a
        # static resource, which would be read with the server's key whoever asked.
        listed = await super().list_resources()
        if self._default_user:
            listed += [
                Resource(
                    uri=f"atlaso://{self._default_user}/{name}",
                    name=f"{self._default_user} {name}",
                    description=description,
                    mime_type=JSON,
                )
                for name, description in RESOURCES.items()
            ]
        return listed


def _resources(server: MCPServer, box: _Toolbox) -> None:
    async def read(ctx: Context, user_id: str, work: Callable[[AsyncUserHandle], Awaitable[Any]]) -> str:
        try:
            handle = await box.user(user_id, ctx)
            return json.dumps(await work(handle), ensure_ascii=False, indent=2)
        except AtlasoError as error:
            raise ResourceError(box.keys.teach(error, ctx)) from error
        except ToolError as error:
            raise ResourceError(str(error)) from error

    @server.resource(
        "atlaso://{user_id}/conflicts", name="conflicts", description=RESOURCES["conflicts"], mime_type=JSON
    )
    async def conflicts(user_id: str, ctx: Context) -> str:
        async def work(handle: AsyncUserHandle) -> Any:
            plan = conflicts_plan(handle.user_id, limit=50, dashboard=box.dashboard)
            return (await adrive(handle._memory, plan))[1]

        return await read(ctx, user_id, work)

    @server.resource(
        "atlaso://{user_id}/deposits/{deposit_id}",
        name="deposit",
        description="One deposit with its audit state (superseded_by, retracted).",
        mime_type=JSON,
    )
    async def deposit(user_id: str, deposit_id: str, ctx: Context) -> str:
        async def work(handle: AsyncUserHandle) -> Any:
            return (await handle.get(deposit_id)).to_dict()

        return await read(ctx, user_id, work)

    @server.resource(
        "atlaso://{user_id}/health", name="health", description=RESOURCES["health"], mime_type=JSON
    )
    async def health(user_id: str, ctx: Context) -> str:
        async def work(handle: AsyncUserHandle) -> Any:
            return (await handle.health()).to_dict()

        return await read(ctx, user_id, work)


SETTLE_PROMPT = """\
Help me settle what my memory disagrees about. Atlaso's memory of {owner} holds claims that
contradict each other; here they are, each side's claims under its bag:

{conflicts}

Go through them with me one bag at a time: show me both sides in plain words and ask me which
one holds and why. Do not pick a side yourself. When I answer, call the settle tool with the
bag's id (it asks me in a form where the host can), or, if I already told you, contradict the
claims that no longer hold with my reason. If a bag needs evidence I do not have, say so and
leave it open: a person can settle it on its dashboard page."""

KNOWS_PROMPT = """\
Here is what Atlaso's memory of {owner} holds about "{topic}" ({verdict}):

{hits}

Answer from it, and only from it. Trust a claim marked confident; say plainly when the memory
disagrees with itself (conflict) instead of choosing a side, and treat the rest as single,
unconfirmed observations. If nothing here answers it, say that the memory does not know."""


def _prompts(server: MCPServer, box: _Toolbox) -> None:
    owner_help = _owner_help(box.default_user)

    @server.prompt(
        name="settle_conflict",
        title="Settle a conflict with the user",
        description="Go through the owner's open conflicts with the person, one at a time, and record "
        "which side holds in their words. " + owner_help,
    )
    async def settle_conflict(ctx: Context, user_id: str | None = None) -> str:
        try:
            handle = await box.user(user_id, ctx)
            plan = conflicts_plan(handle.user_id, limit=10, dashboard=box.dashboard)
            text, _ = await adrive(handle._memory, plan)
        except AtlasoError as error:
            raise ValueError(box.keys.teach(error, ctx)) from error
        return SETTLE_PROMPT.format(owner=handle.user_id, conflicts=text)

    @server.prompt(
        name="what_memory_knows",
        title="What the memory knows about …",
        description="What the owner's memory holds about a topic, with its confidence and conflicts, "
        "to answer from. " + owner_help,
    )
    async def what_memory_knows(topic: str, ctx: Context, user_id: str | None = None) -> str:
        try:
            handle = await box.user(user_id, ctx)
            results = await handle.recall(topic, limit=20)
        except AtlasoError as error:
            raise ValueError(box.keys.teach(error, ctx)) from error
        hits = "\n".join(recall_text(results).splitlines()[1:]) or "(nothing)"
        return KNOWS_PROMPT.format(owner=handle.user_id, topic=topic, verdict=results.explain(), hits=hits)


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
    server = _AtlasoServer(
        name,
        instructions=prose(INSTRUCTIONS),
        version=VERSION,
        log_level="WARNING",
        tools=box.tools,
        default_user=default_user,
    )
    _resources(server, box)
    _prompts(server, box)
    return server


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
        if transport == "streamable-http":
            print(
                "atlaso mcp: no ATLASO_API_KEY: each caller must send its own key as "
                "'Authorization: Bearer <key>'.",
                file=sys.stderr,
            )
        else:
            print(
                f"atlaso mcp: warning: {HOW_TO_GET_A_KEY}. Every tool will answer an error until then.",
                file=sys.stderr,
            )
    server = build_server(memory)
    if transport == "streamable-http":
        _serve_http(server, host, port)
    else:
        server.run("stdio")
