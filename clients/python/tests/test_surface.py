"""The package's public surface as client.md fixes it, checked with the package alone.

Names, construction, the error tree, the result types, and one implementation behind the sync
and async clients. That `idempotency_key` equals the server's is checked beside the server
(tests/client/test_surface.py in the project).
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import inspect
from datetime import timezone
from pathlib import Path

import httpx
import pytest
from test_retries import ADDED, DEPOSIT, Script

import atlaso
from atlaso import (
    AsyncMemory,
    AsyncUserHandle,
    AuthenticationError,
    ConfigValidationError,
    Deposit,
    Memory,
    SearchResult,
    SearchResults,
    UserHandle,
)

# datetime.UTC is Python 3.11's; the package supports 3.10.
UTC = timezone.utc
PACKAGE = Path(atlaso.__file__).resolve().parent

TREE = {
    "AtlasoError": "Exception",
    "ConfigurationError": "AtlasoError",
    "ConfigValidationError": "ConfigurationError",
    "InputValidationError": "ConfigurationError",
    "MissingContradictsError": "InputValidationError",
    "AuthenticationError": "AtlasoError",
    "TransportError": "AtlasoError",
    "ConnectError": "TransportError",
    "RequestTimeoutError": "TransportError",
    "APIStatusError": "TransportError",
    "PermissionDeniedError": "APIStatusError",
    "NotFoundError": "APIStatusError",
    "PayloadTooLargeError": "APIStatusError",
    "RateLimitError": "APIStatusError",
    "ServerError": "APIStatusError",
    "FieldError": "AtlasoError",
    "DepositRejectedError": "FieldError",
    "IdempotencyKeyConflict": "AtlasoError",
}
RESULT_TYPES = [
    "Scope", "Deposit", "SearchResult", "SearchResults", "Diagnostics", "AddResult", "AddItem",
    "BulkReject", "AddManyResult", "RetractResult", "PeekView", "DepositPage", "Bag", "BagPage",
    "BeliefVerdict", "BeliefPage", "BeliefRevision", "ApiKeyInfo",
]  # fmt: skip


def test_the_error_tree_is_exactly_the_documented_one():
    for name, parent in TREE.items():
        cls = getattr(atlaso, name)
        assert cls.__bases__ == (getattr(atlaso, parent, None) or getattr(builtins, parent),), name


def test_no_public_name_shadows_a_builtin():
    assert not [name for name in atlaso.__all__ if hasattr(builtins, name)]


def test_every_result_type_is_a_frozen_slotted_dataclass_with_to_dict():
    for name in RESULT_TYPES:
        cls = getattr(atlaso, name)
        assert dataclasses.is_dataclass(cls), name
        assert cls.__dataclass_params__.frozen, name
        assert "__slots__" in cls.__dict__, name
        assert callable(getattr(cls, "to_dict", None)), name


def test_public_code_never_uses_dataclasses_asdict():
    for path in PACKAGE.glob("*.py"):
        tree = ast.parse(path.read_text())
        used = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        used |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        assert "asdict" not in used, path.name


def test_the_package_imports_only_httpx_and_the_standard_library_outside_its_mcp_server():
    allowed = {"atlaso", "httpx", "__future__"} | set(__import__("sys").stdlib_module_names)
    for path in PACKAGE.glob("*.py"):
        # The MCP server's SDK, and the import's progress bar (rich, the `cli` extra), load
        # only when those are used.
        if path.name in ("mcp_server.py", "_mcp_shapes.py", "_progress.py"):
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            assert {n.split(".")[0] for n in names} <= allowed, (path.name, names)


def test_memory_is_keyword_only():
    with pytest.raises(TypeError):
        Memory("atl_key")  # type: ignore[misc]


def test_construction_does_no_io_and_a_missing_key_fails_the_first_call_saying_how_to_get_one(monkeypatch):
    monkeypatch.setenv("ATLASO_API_KEY", "")  # set but empty counts as missing
    script = Script((200, {}))
    m = Memory(base_url="http://atlaso.test", transport=httpx.MockTransport(script))
    assert m._http is None
    with pytest.raises(AuthenticationError) as raised:
        m.for_user("alice").recall("milk")
    assert "create_api_key" in str(raised.value) and "ATLASO_API_KEY" in str(raised.value)
    assert script.requests == []


def test_settings_come_from_arguments_then_the_environment_then_the_defaults(monkeypatch):
    monkeypatch.delenv("ATLASO_BASE_URL", raising=False)
    monkeypatch.delenv("ATLASO_API_KEY", raising=False)
    default = Memory().settings
    assert (default.base_url, default.base_url_source, default.api_key) == (
        "http://127.0.0.1:8000",
        "default",
        None,
    )
    monkeypatch.setenv("ATLASO_BASE_URL", "http://memory.internal:9000/")
    monkeypatch.setenv("ATLASO_API_KEY", "atl_from_env")
    from_env = Memory().settings
    assert (from_env.base_url, from_env.base_url_source) == ("http://memory.internal:9000", "ATLASO_BASE_URL")
    assert from_env.api_key == "atl_from_env" and from_env.api_root == "http://memory.internal:9000/api/v1"
    given_ = Memory(api_key="atl_arg", base_url="https://m.example/api/v1").settings
    assert (given_.api_key, given_.api_key_source, given_.api_root) == (
        "atl_arg",
        "argument",
        "https://m.example/api/v1",
    )


@pytest.mark.parametrize(
    "transport", [httpx.Client(), httpx.AsyncClient(), "http://x"], ids=["client", "async", "str"]
)
def test_a_transport_that_is_not_one_is_refused(transport):
    with pytest.raises(ConfigValidationError):
        Memory(transport=transport)


def test_each_client_takes_its_own_kind_of_transport():
    with pytest.raises(ConfigValidationError, match="AsyncMemory takes"):
        Memory(transport=httpx.AsyncHTTPTransport())
    with pytest.raises(ConfigValidationError, match="Memory takes"):
        AsyncMemory(transport=httpx.HTTPTransport())


@pytest.mark.parametrize("bad", [{"timeout": 0}, {"max_retries": -1}, {"base_url": "memory.internal"}])
def test_bad_settings_are_refused_at_construction(bad):
    with pytest.raises(ConfigValidationError):
        Memory(api_key="k", **bad)


def test_validate_user_id_runs_in_for_user_and_before_every_call():
    seen: list[str] = []

    def only_tenants(user_id: str) -> None:
        seen.append(user_id)
        if not user_id.startswith("tenant-"):
            raise ValueError(f"{user_id} is not a tenant")

    script = Script((201, ADDED))
    m = Memory(api_key="k", base_url="http://atlaso.test", transport=httpx.MockTransport(script),
               validate_user_id=only_tenants)  # fmt: skip
    with pytest.raises(ValueError):
        m.for_user("alice")
    m.for_user("tenant-alice").add("x")
    with pytest.raises(ValueError):
        m.add("x", user_id="bob")
    assert seen == ["alice", "tenant-alice", "tenant-alice", "bob"]
    assert len(script.requests) == 1


def test_a_handle_is_frozen_slotted_and_cannot_be_rebound():
    user = Memory(api_key="k").for_user("alice")
    assert user.user_id == "alice"
    with pytest.raises(AttributeError):
        user.user_id = "bob"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        user.nickname = "al"  # type: ignore[attr-defined]
    assert not hasattr(user, "__dict__")
    assert isinstance(AsyncMemory(api_key="k").for_user("alice"), AsyncUserHandle)


@pytest.mark.parametrize("name", ["update", "edit"])
def test_update_and_edit_raise_attribute_error_pointing_at_contradict(name):
    user = Memory(api_key="k").for_user("alice")
    with pytest.raises(AttributeError, match=r"^deposits are immutable\. Use user\.contradict\(new_text"):
        getattr(user, name)("new words")
    assert not hasattr(user, name)
    with pytest.raises(AttributeError, match=r"m\.contradict"):
        getattr(Memory(api_key="k"), name)
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        user.nope  # noqa: B018


def _public_methods(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_")
    }


def test_the_async_handle_has_every_method_of_the_sync_one_with_the_same_signature_awaitable():
    sync, asyn = _public_methods(UserHandle), _public_methods(AsyncUserHandle)
    assert set(sync) == set(asyn)
    for name, signature in sync.items():
        other = asyn[name]
        assert list(signature.parameters) == list(other.parameters), name
        assert [p.default for p in signature.parameters.values()] == [
            p.default for p in other.parameters.values()
        ], name
        method = getattr(AsyncUserHandle, name)
        assert inspect.iscoroutinefunction(method) or inspect.isasyncgenfunction(method), name


def test_memory_has_every_handle_method_naming_the_owner_with_user_id():
    handle = _public_methods(UserHandle)
    for cls in (Memory, AsyncMemory):
        methods = _public_methods(cls)
        for name, signature in handle.items():
            assert name in methods, (cls.__name__, name)
            params = methods[name].parameters
            assert params["user_id"].kind is inspect.Parameter.KEYWORD_ONLY, (cls.__name__, name)
            assert [p for p in params if p != "user_id"] == list(signature.parameters), (cls.__name__, name)


def test_search_results_iterate_index_and_are_falsy_when_empty_but_are_not_a_list():
    wire = {"kind": "search_results", "items": [], "has_disagreement": False, "is_confident": False,
            "bag_count": 0, "conflict_bag_count": 0, "explain": "0 hits across 0 bags · 0 bags in conflict · not confident"}  # fmt: skip
    empty = SearchResults.from_wire(wire)
    assert not empty and len(empty) == 0 and list(empty) == []
    assert not isinstance(empty, list)
    hit = {**{k: DEPOSIT[k] for k in ("id", "content", "polarity", "evidence_grade", "scope", "tags", "created_at")},
           "kind": "search_result", "score": 0.4, "is_confident": False, "has_disagreement": True,
           "agreement_score": 0.5, "is_thin_evidence": False, "conflict_peers": ["p1"], "bag_id": "bag_1",
           "superseded": False, "explain": "Not confident.", "belief": None, "deposit": DEPOSIT}  # fmt: skip
    full = SearchResults.from_wire({**wire, "items": [hit, hit]})
    assert full and len(full) == 2 and full[0].id == DEPOSIT["id"] and full[-1].conflict_peers == ("p1",)
    assert isinstance(full[0:1], tuple)
    assert full.explain() == wire["explain"] and full[0].explain() == "Not confident."


def test_results_tolerate_fields_a_newer_server_adds():
    newer = {**DEPOSIT, "confidence_interval": [0.1, 0.9], "scope": {**DEPOSIT["scope"], "region": "eu"}}
    deposit = Deposit.from_wire(newer)
    assert deposit.content == DEPOSIT["content"]
    assert deposit.to_dict() == DEPOSIT


def test_a_search_result_exposes_its_deposits_fields_as_properties_not_by_inheritance():
    hit = SearchResult(deposit=Deposit.from_wire(DEPOSIT), score=1.0, is_confident=True, has_disagreement=False,
                       agreement_score=1.0, is_thin_evidence=False)  # fmt: skip
    assert not isinstance(hit, Deposit)
    assert (hit.id, hit.content, hit.polarity, hit.evidence_grade, hit.tags) == (
        DEPOSIT["id"], DEPOSIT["content"], "open", "anecdotal", ())  # fmt: skip
    assert hit.scope == Deposit.from_wire(DEPOSIT).scope


def test_timestamps_are_timezone_aware():
    assert Deposit.from_wire(DEPOSIT).created_at.tzinfo is not None
    naive = Deposit.from_wire({**DEPOSIT, "created_at": "2026-05-11T14:23:00.123456"})
    assert naive.created_at.tzinfo == UTC
