"""LangChain over Atlaso: `AtlasoRetriever` (a `BaseRetriever`) and `atlaso_tools(handle)`.

Both are bound to one memory owner, the handle's (`Memory().for_user("alice")`, or an
`AsyncMemory`'s handle for async chains): a model using them cannot reach another owner's memory.

- `AtlasoRetriever(handle, *, k=10, mode=None)` answers recall's hits as `Document`s: the claim
  as `page_content`, and in `metadata` its id, scope, polarity, grade, its bag's flags
  (`is_confident`, `has_disagreement`, `is_thin_evidence`, `agreement_score`, `conflict_peers`,
  `bag_id`), its score, and `recall`: the flags over every matching bag (a conflict `k` left out
  still shows there) with the verdict line.
- `atlaso_tools(handle)` gives three `StructuredTool`s, `remember`, `recall` and `conflicts`,
  described to the model as the MCP server's `add`, `recall` and `conflicts` are; each answers a
  short text and, as its artifact, the structured content the MCP tool answers. A refusal (the
  write gate, a bad field) is the tool's answer, saying what would pass.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import StructuredTool, ToolException
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from atlaso import _operations as ops
from atlaso._agent_tools import (
    ARTIFACTS_HELP,
    CONFLICTS_LIMIT_HELP,
    CONTENT_HELP,
    DESCRIPTIONS,
    FILTER_HELP,
    GRADE_HELP,
    POLARITY_HELP,
    QUERY_HELP,
    RECALL_LIMIT_HELP,
    SCOPE_HELP,
    TAGS_HELP,
    conflicts_plan,
    recall_structured,
    recall_text,
    stored_line,
    teach,
)
from atlaso._async_client import AsyncUserHandle
from atlaso._client import UserHandle
from atlaso._errors import AtlasoError
from atlaso._mcp_shapes import ScopeFilterIn, ScopeIn
from atlaso._plan import Plan, adrive, drive
from atlaso._types import AddResult, EvidenceGrade, Polarity, RecallMode, SearchResults

T = TypeVar("T")
Handle = UserHandle | AsyncUserHandle


def _blocking(handle: Handle, plan: Plan[T]) -> T:
    """Run `plan` from synchronous code, with either handle."""
    if isinstance(handle, UserHandle):
        return drive(handle._memory, plan)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(adrive(handle._memory, plan))
    raise RuntimeError(
        "an AsyncUserHandle cannot be used synchronously inside a running event loop: use ainvoke "
        "(or a Memory's handle in synchronous code)"
    )


async def _awaited(handle: Handle, plan: Plan[T]) -> T:
    """Run `plan` from async code: natively with an async handle, in a thread with a sync one."""
    if isinstance(handle, AsyncUserHandle):
        return await adrive(handle._memory, plan)
    return await asyncio.to_thread(drive, handle._memory, plan)


def _recall_plan(
    handle: Handle, query: str, *, limit: int, mode: RecallMode | None = None
) -> Plan[SearchResults]:
    (results,) = yield [ops.recall(handle.user_id, query, limit=limit, mode=mode)]
    assert isinstance(results, SearchResults)
    return results


def _document(hit: Any, results: SearchResults) -> Document:
    scope = {name: value for name, value in hit.scope.to_dict().items() if value is not None}
    metadata = {
        "id": hit.id,
        "user_id": hit.deposit.user_id,
        "polarity": hit.polarity,
        "evidence_grade": hit.evidence_grade,
        "scope": scope,
        "tags": list(hit.tags),
        "created_at": hit.deposit.created_at.isoformat(),
        "score": hit.score,
        "is_confident": hit.is_confident,
        "has_disagreement": hit.has_disagreement,
        "is_thin_evidence": hit.is_thin_evidence,
        "agreement_score": hit.agreement_score,
        "conflict_peers": list(hit.conflict_peers),
        "bag_id": hit.bag_id,
        "explain": hit.explain(),
        "recall": {
            "has_disagreement": results.has_disagreement,
            "is_confident": results.is_confident,
            "explain": results.explain(),
        },
    }
    return Document(id=hit.id, page_content=hit.content, metadata=metadata)


class AtlasoRetriever(BaseRetriever):
    """Recall over one owner's memory, as LangChain documents with the flags in their metadata."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    handle: Any
    k: int = Field(default=10, ge=1, le=1000)
    mode: RecallMode | None = None

    def __init__(self, handle: Handle, *, k: int = 10, mode: RecallMode | None = None, **kwargs: Any) -> None:
        if not isinstance(handle, (UserHandle, AsyncUserHandle)):
            raise TypeError(
                f"AtlasoRetriever takes a memory owner's handle (Memory().for_user('alice')), not {type(handle).__name__}"
            )
        fields: dict[str, Any] = {"handle": handle, "k": k, "mode": mode, **kwargs}
        super().__init__(**fields)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        results = _blocking(self.handle, _recall_plan(self.handle, query, limit=self.k, mode=self.mode))
        return [_document(hit, results) for hit in results]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        results = await _awaited(self.handle, _recall_plan(self.handle, query, limit=self.k, mode=self.mode))
        return [_document(hit, results) for hit in results]


# ---- Tools --------------------------------------------------------------------------------


class _Args(BaseModel):
    # A misspelt argument fails the call by name rather than vanish.
    model_config = ConfigDict(extra="forbid")


class RememberArgs(_Args):
    content: Annotated[str, Field(description=CONTENT_HELP)]
    polarity: Annotated[Polarity, Field(description=POLARITY_HELP)] = "open"
    evidence_grade: Annotated[EvidenceGrade, Field(description=GRADE_HELP)] = "anecdotal"
    scope: Annotated[ScopeIn | None, Field(description=SCOPE_HELP)] = None
    tags: Annotated[list[str] | None, Field(description=TAGS_HELP)] = None
    artifact_refs: Annotated[list[str] | None, Field(description=ARTIFACTS_HELP)] = None


class RecallArgs(_Args):
    query: Annotated[str, Field(description=QUERY_HELP)]
    limit: Annotated[int, Field(ge=1, le=1000, description=RECALL_LIMIT_HELP)] = 10
    scope: Annotated[ScopeFilterIn | None, Field(description=FILTER_HELP)] = None


class ConflictsArgs(_Args):
    limit: Annotated[int, Field(ge=1, le=50, description=CONFLICTS_LIMIT_HELP)] = 10


Answer = tuple[str, dict[str, Any]]


def _remember(handle: Handle, **arguments: Any) -> Plan[Answer]:
    (result,) = yield [ops.add(handle.user_id, arguments.pop("content"), **arguments)]
    assert isinstance(result, AddResult)
    return stored_line(result.deposit, replay=result.is_idempotent_replay), result.to_dict()


def _recall(handle: Handle, *, query: str, limit: int = 10, scope: Any = None) -> Plan[Answer]:
    (results,) = yield [ops.recall(handle.user_id, query, limit=limit, scope=scope)]
    assert isinstance(results, SearchResults)
    return recall_text(results), recall_structured(results)


def _conflicts(handle: Handle, *, dashboard: str, limit: int = 10) -> Plan[Answer]:
    return (yield from conflicts_plan(handle.user_id, limit=limit, dashboard=dashboard))


def _refusal(error: ValidationError) -> str:
    """A refused argument, said so the model can call again correctly."""
    parts = []
    for problem in error.errors():
        where = ".".join(str(p) for p in problem["loc"]) or "arguments"
        parts.append(f"{where}: {problem['msg']}")
    return "Invalid arguments, nothing was done: " + "; ".join(parts)


def _tool(
    handle: Handle, name: str, mcp_name: str, args: type[_Args], plan: Callable[..., Plan[Answer]]
) -> StructuredTool:
    """A tool running `plan` with the handle, sync or async, its refusals answered as text."""

    def call(**arguments: Any) -> Answer:
        try:
            return _blocking(handle, plan(handle, **arguments))
        except AtlasoError as error:
            raise ToolException(teach(error)) from error

    async def acall(**arguments: Any) -> Answer:
        try:
            return await _awaited(handle, plan(handle, **arguments))
        except AtlasoError as error:
            raise ToolException(teach(error)) from error

    return StructuredTool.from_function(
        func=call,
        coroutine=acall,
        name=name,
        description=DESCRIPTIONS[mcp_name],
        args_schema=args,
        response_format="content_and_artifact",
        handle_tool_error=True,
        handle_validation_error=_refusal,
    )


def atlaso_tools(handle: Handle) -> list[StructuredTool]:
    """`remember`, `recall` and `conflicts` over the handle's owner, for a LangChain agent."""
    if not isinstance(handle, (UserHandle, AsyncUserHandle)):
        raise TypeError(
            f"atlaso_tools takes a memory owner's handle (Memory().for_user('alice')), not {type(handle).__name__}"
        )
    dashboard = handle._memory.settings.base_url

    def conflicts(handle: Handle, **arguments: Any) -> Plan[Answer]:
        return _conflicts(handle, dashboard=dashboard, **arguments)

    return [
        _tool(handle, "remember", "add", RememberArgs, _remember),
        _tool(handle, "recall", "recall", RecallArgs, _recall),
        _tool(handle, "conflicts", "conflicts", ConflictsArgs, conflicts),
    ]


__all__ = ["AtlasoRetriever", "atlaso_tools"]
