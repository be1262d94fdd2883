"""Write what `_client.py` implies: `Memory`'s per-owner methods and the whole async client.

Each public method of the client is declared once, on `UserHandle` in `src/atlaso/_client.py`.
From that file this script writes:

- `Memory`'s twin of each handle method, naming the owner with `user_id=` and handing the call
  to `for_user(user_id)` (between the `<generated>` markers in `_client.py`);
- `_async_client.py`: `_client.py` with `AsyncMemory` and `AsyncUserHandle` for its classes,
  `AsyncSender` (`_sending.py`) under the memory, and the awaits that follow. A method that calls
  a coroutine becomes one, and its call is awaited; a generator that does becomes an async
  generator; `for` over an httpx `aiter_*` becomes `async for`.

Run it after editing `_client.py`: `python clients/python/tools/generate_clients.py`. With
`--check` (as `make lint` runs it) it writes nothing and fails, showing the difference, when
either file is not what it would write.
"""

from __future__ import annotations

import argparse
import ast
import copy
import difflib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
PACKAGE = PROJECT / "src" / "atlaso"
CLIENT = PACKAGE / "_client.py"
ASYNC_CLIENT = PACKAGE / "_async_client.py"
SENDING = PACKAGE / "_sending.py"

BEGIN = (
    "    # <generated from UserHandle by tools/generate_clients.py: edit the handle's methods, then run it>"
)
END = "    # </generated>"

# Each synchronous name and its asynchronous twin, wherever it appears: a name, an attribute, an
# import or a definition.
RENAMES = {
    "Memory": "AsyncMemory",
    "UserHandle": "AsyncUserHandle",
    "Sender": "AsyncSender",
    "Iterator": "AsyncIterator",
    "BaseTransport": "AsyncBaseTransport",
    "close": "aclose",
    "__enter__": "__aenter__",
    "__exit__": "__aexit__",
    "iter_bytes": "aiter_bytes",
    "iter_lines": "aiter_lines",
    "iter_raw": "aiter_raw",
    "chunks": "achunks",
}
# Coroutine methods of objects defined elsewhere (httpx's responses), awaited on any receiver.
AWAITED_ANYWHERE = frozenset({"aclose"})
# httpx's async iterators: a `for` over one becomes `async for`.
ASYNC_ITERATORS = frozenset({"aiter_bytes", "aiter_lines", "aiter_raw"})
# Methods the async protocols require to be coroutines, whether or not they await.
PROTOCOL_COROUTINES = frozenset({"__aenter__", "__aexit__"})

HEADER = """\
# Generated from _client.py by tools/generate_clients.py: do not edit. Edit _client.py (how
# requests are sent: _sending.py), then run `python clients/python/tools/generate_clients.py`.
"""
# The docstrings that say what differs; every method keeps its synchronous twin's.
ASYNC_DOCSTRINGS = {
    "module": """`AsyncMemory` and its `AsyncUserHandle`: the asynchronous client.

The same operations (`_operations`) and the same exchange (`_core`) as `Memory`, driven with
`httpx.AsyncClient` and `asyncio.sleep`; only the sending differs.
""",
    "AsyncMemory": """`Memory`, awaitable: `for_user()` is synchronous and gives an `AsyncUserHandle`.

    Takes the same keyword arguments; `transport` is an `httpx.AsyncBaseTransport`. Close it
    with `await m.aclose()` or `async with AsyncMemory() as m:`.
    """,
    "AsyncUserHandle": """One owner's memory, awaitable: `AsyncMemory().for_user("alice")`. Frozen: it cannot be \
rebound.""",
}

Function = ast.FunctionDef | ast.AsyncFunctionDef


def main(argv: list[str] | None = None) -> int:
    """Write both files, or with `--check` report whether they are what would be written."""
    parser = argparse.ArgumentParser(description="Write Memory's per-owner methods and the async client.")
    parser.add_argument("--check", action="store_true", help="write nothing; fail if a file is stale")
    args = parser.parse_args(argv)
    client = with_owner_methods(CLIENT.read_text())
    wanted = {CLIENT: client, ASYNC_CLIENT: async_client(client, SENDING.read_text())}
    stale = [path for path, text in wanted.items() if not path.exists() or path.read_text() != text]
    if not args.check:
        for path in stale:
            path.write_text(wanted[path])
            print(f"wrote {path.relative_to(PROJECT)}")
        return 0
    for path in stale:
        old = path.read_text().splitlines(keepends=True) if path.exists() else []
        name = str(path.relative_to(PROJECT))
        sys.stdout.writelines(difflib.unified_diff(old, wanted[path].splitlines(keepends=True), name, name))
    if stale:
        print(
            f"{', '.join(p.name for p in stale)} not as generated from _client.py: "
            "run `python clients/python/tools/generate_clients.py`",
            file=sys.stderr,
        )
    return 1 if stale else 0


# `Memory`'s per-owner methods.


def with_owner_methods(source: str) -> str:
    """`_client.py` with `Memory`'s twin of every public handle method between the markers."""
    lines = source.splitlines()
    if lines.count(BEGIN) != 1 or lines.count(END) != 1 or lines.index(BEGIN) > lines.index(END):
        raise SystemExit(f"{CLIENT.name} needs one pair of markers, in order:\n{BEGIN}\n{END}")
    handle = find_class(ast.parse(source), "UserHandle")
    # Unparsed inside a class, so each line carries the indentation it has in place.
    holder = copy.deepcopy(handle)
    holder.body = [owner_method(method) for method in public_methods(handle)]
    body = ast.unparse(ast.fix_missing_locations(ast.Module(body=[holder], type_ignores=[])))
    generated = body.split("\n", 1)[1]
    begin, end = lines.index(BEGIN), lines.index(END)
    return formatted("\n".join([*lines[: begin + 1], generated, *lines[end:]]) + "\n", CLIENT)


def public_methods(cls: ast.ClassDef) -> Iterator[ast.FunctionDef]:
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            yield node


def owner_method(method: ast.FunctionDef) -> ast.FunctionDef:
    """`method` on the memory: `user_id` first among its keywords, the call handed to the handle."""
    given = method.args
    if given.posonlyargs or given.vararg or given.kwarg or method.decorator_list:
        raise SystemExit(f"UserHandle.{method.name}: plain parameters and no decorator, to be mirrored")
    args = copy.deepcopy(given)
    args.kwonlyargs.insert(0, ast.arg(arg="user_id", annotation=ast.Name(id="str")))
    args.kw_defaults.insert(0, None)
    handle = ast.Call(func=attribute("self", "for_user"), args=[ast.Name(id="user_id")], keywords=[])
    call = ast.Call(
        func=ast.Attribute(value=handle, attr=method.name),
        args=[ast.Name(id=a.arg) for a in given.args[1:]],
        keywords=[ast.keyword(arg=a.arg, value=ast.Name(id=a.arg)) for a in given.kwonlyargs],
    )
    twin = copy.deepcopy(method)
    docstring = twin.body[:1] if ast.get_docstring(twin) is not None else []
    twin.args, twin.body = args, [*docstring, ast.Return(value=call)]
    return twin


# The asynchronous client.


def async_client(client_source: str, sending_source: str) -> str:
    """`_async_client.py`, from `_client.py` and the coroutines of `AsyncSender`."""
    tree = ast.parse(client_source)
    Renamer().visit(tree)
    sender = find_class(ast.parse(sending_source), "AsyncSender")
    memory, handle = find_class(tree, "AsyncMemory"), find_class(tree, "AsyncUserHandle")
    if [base.id for base in memory.bases if isinstance(base, ast.Name)] != ["AsyncSender"]:
        raise SystemExit("Memory must stand on Sender alone: its async twin stands on AsyncSender")
    inherited = {node.name for node in sender.body if isinstance(node, ast.AsyncFunctionDef)}
    Asynchronizer({"AsyncMemory": memory, "AsyncUserHandle": handle}, inherited).apply()
    set_docstring(tree, ASYNC_DOCSTRINGS["module"])
    set_docstring(memory, ASYNC_DOCSTRINGS["AsyncMemory"])
    set_docstring(handle, ASYNC_DOCSTRINGS["AsyncUserHandle"])
    return formatted(HEADER + ast.unparse(ast.fix_missing_locations(tree)) + "\n", ASYNC_CLIENT)


class Renamer(ast.NodeTransformer):
    """Every synchronous name in `RENAMES` to its asynchronous twin."""

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = RENAMES.get(node.id, node.id)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.Attribute:
        self.generic_visit(node)
        node.attr = RENAMES.get(node.attr, node.attr)
        return node

    def visit_alias(self, node: ast.alias) -> ast.alias:
        node.name = RENAMES.get(node.name, node.name)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        self.generic_visit(node)
        node.name = RENAMES.get(node.name, node.name)
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.ClassDef:
        self.generic_visit(node)
        node.name = RENAMES.get(node.name, node.name)
        return node


class Asynchronizer:
    """Make async what must be: awaits on coroutine calls, their callers coroutines, in turn.

    A call is a coroutine's when it names a coroutine method of a class known here through the
    receivers this code uses (`self`, `self._memory`, `self.for_user(...)`), or an httpx
    coroutine (`AWAITED_ANYWHERE`). A method that awaits becomes a coroutine, or an async
    generator if it yields; an async generator's calls are not awaited. Repeated until settled,
    since a method that becomes a coroutine makes its callers await it.
    """

    def __init__(self, classes: dict[str, ast.ClassDef], inherited: set[str]) -> None:
        self.classes = classes
        self.coroutines: dict[str, set[str]] = {name: set() for name in classes}
        self.coroutines["AsyncMemory"] |= inherited
        self.made_async: set[tuple[str, str]] = set()

    def apply(self) -> None:
        while self._settle_one_more():
            pass
        for cls_name, cls in self.classes.items():
            cls.body = [self._rewritten(cls_name, node) for node in cls.body]

    def _settle_one_more(self) -> bool:
        changed = False
        for cls_name, cls in self.classes.items():
            for method in methods(cls):
                key = (cls_name, method.name)
                if key in self.made_async or not self._must_be_async(cls_name, method):
                    continue
                self.made_async.add(key)
                if not yields(method):
                    self.coroutines[cls_name].add(method.name)
                changed = True
        return changed

    def _must_be_async(self, cls_name: str, method: ast.FunctionDef) -> bool:
        return (
            method.name in PROTOCOL_COROUTINES
            or any(self._awaited(cls_name, node) for node in walk_body(method))
            or any(async_iteration(node) for node in walk_body(method))
        )

    def _awaited(self, cls_name: str, node: ast.AST) -> bool:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            return False
        name, receiver = node.func.attr, node.func.value
        if name in AWAITED_ANYWHERE:
            return True
        owner = self._receiver_class(cls_name, receiver)
        return owner is not None and name in self.coroutines[owner]

    def _receiver_class(self, cls_name: str, receiver: ast.expr) -> str | None:
        if is_name(receiver, "self"):
            return cls_name
        if (
            isinstance(receiver, ast.Attribute)
            and is_name(receiver.value, "self")
            and receiver.attr == "_memory"
        ):
            return "AsyncMemory"
        if isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute):
            for_user = is_name(receiver.func.value, "self") and receiver.func.attr == "for_user"
            return "AsyncUserHandle" if for_user else None
        return None

    def _rewritten(self, cls_name: str, node: ast.stmt) -> ast.stmt:
        if not isinstance(node, ast.FunctionDef) or (cls_name, node.name) not in self.made_async:
            return node
        awaits = self

        class Awaiter(ast.NodeTransformer):
            def visit_Call(self, call: ast.Call) -> ast.expr:
                self.generic_visit(call)
                return ast.Await(value=call) if awaits._awaited(cls_name, call) else call

            def visit_For(self, loop: ast.For) -> ast.stmt:
                self.generic_visit(loop)
                if not async_iteration(loop):
                    return loop
                fields = {field: getattr(loop, field) for field in loop._fields}
                return ast.copy_location(ast.AsyncFor(**fields), loop)

        rewritten = Awaiter().visit(node)
        fields = {field: getattr(rewritten, field) for field in rewritten._fields}
        return ast.copy_location(ast.AsyncFunctionDef(**fields), node)


# Small helpers.


def find_class(tree: ast.Module, name: str) -> ast.ClassDef:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise SystemExit(f"no class {name} to generate from")


def methods(cls: ast.ClassDef) -> Iterator[ast.FunctionDef]:
    for node in cls.body:
        if isinstance(node, ast.FunctionDef):
            yield node


def walk_body(function: Function) -> Iterator[ast.AST]:
    """Every node of `function`'s body; a function nested in it would be its own matter."""
    for node in ast.walk(ast.Module(body=function.body, type_ignores=[])):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            raise SystemExit(f"{function.name}: a nested function cannot be made async here")
        yield node


def yields(function: Function) -> bool:
    return any(isinstance(node, (ast.Yield, ast.YieldFrom)) for node in walk_body(function))


def async_iteration(node: ast.AST) -> bool:
    """Whether `node` is a `for` over one of httpx's async iterators."""
    return isinstance(node, ast.For) and any(
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in ASYNC_ITERATORS
        for call in ast.walk(node.iter)
    )


def is_name(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def attribute(name: str, attr: str) -> ast.Attribute:
    return ast.Attribute(value=ast.Name(id=name), attr=attr)


def set_docstring(node: ast.Module | ast.ClassDef, text: str) -> None:
    if ast.get_docstring(node) is None:
        raise SystemExit("a docstring to replace is missing")
    first = node.body[0]
    assert isinstance(first, ast.Expr)
    first.value = ast.Constant(value=text)


def formatted(source: str, path: Path) -> str:
    """`source` with its imports sorted and formatted, by the ruff and the settings `make lint` uses."""
    for command in (["check", "--fix-only", "--select", "I", "--quiet"], ["format", "--quiet"]):
        done = subprocess.run(
            [sys.executable, "-m", "ruff", *command, "--stdin-filename", str(path), "-"],
            input=source, capture_output=True, text=True, cwd=PROJECT,
        )  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"ruff {command[0]} failed on the generated {path.name}:\n{done.stderr}")
        source = done.stdout
    return source


if __name__ == "__main__":
    sys.exit(main())
