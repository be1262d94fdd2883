"""The `atlaso` command: `doctor`, `recall`, `add`, `health`, `export`, `import`, `forget`, `mcp`.

`atlaso mcp` is the MCP server.

Each prints for a person by default and the wire form with `--json`; a failure prints one line
saying what went wrong (and what to do) on stderr and exits 1. Usage errors exit 2.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from importlib import metadata
from typing import Any, TextIO

import httpx

from atlaso._client import Memory, UserHandle
from atlaso._core import VERSION
from atlaso._errors import (
    HOW_TO_GET_A_KEY,
    AtlasoError,
    AuthenticationError,
    ConnectError,
    PermissionDeniedError,
    RequestTimeoutError,
)
from atlaso._operations import IMPORT_FORMATS
from atlaso._progress import import_bar
from atlaso._types import Scope, SearchResults
from atlaso._validation import (
    EVIDENCE_GRADE_MEANINGS,
    ON_GATE_REJECT_MEANINGS,
    POLARITY_MEANINGS,
    RECALL_MODE_MEANINGS,
)


def _scope_arguments(parser: argparse.ArgumentParser) -> None:
    for facet in ("model", "dataset", "env", "version"):
        parser.add_argument(f"--{facet}", help=f"scope facet {facet}")
    for facet in ("n", "seed"):
        parser.add_argument(f"--{facet}", type=int, help=f"scope facet {facet} (a whole number)")


def _scope(args: argparse.Namespace, *, note: bool = False) -> Scope | None:
    values = {f: getattr(args, f) for f in ("model", "dataset", "env", "version", "n", "seed")}
    if note:
        values["note"] = args.note
    return Scope(**values) if any(v is not None for v in values.values()) else None


class _Parser(argparse.ArgumentParser):
    """No abbreviated options: `--y` is not `--yes` to `forget`, nor `--dry` `--dry-run`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "allow_abbrev": False})


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="atlaso",
        description="Atlaso's client: typed memory for AI agents. Reads ATLASO_BASE_URL and ATLASO_API_KEY.",
    )
    parser.add_argument("--version", action="version", version=f"atlaso {VERSION}")
    commands = parser.add_subparsers(
        dest="command",
        required=True,
        metavar="COMMAND",
        parser_class=_Parser,
    )

    commands.add_parser("doctor", help="check the server, the key and what the key may do")

    recall = commands.add_parser("recall", help="search an owner's memory, with its conflict flags")
    recall.add_argument("user", help="the memory owner (user_id), e.g. alice")
    recall.add_argument("query", help="words to search for")
    recall.add_argument("--limit", type=int, default=10, help="hits to show (1..1000, default 10)")
    recall.add_argument("--include-superseded", action="store_true", help="also show superseded deposits")
    recall.add_argument(
        "--mode",
        choices=list(RECALL_MODE_MEANINGS),
        help="words (full text), meaning (embeddings), hybrid (both); default: the server's choice",
    )
    _scope_arguments(recall)
    recall.add_argument("--json", action="store_true", help="print the wire form")

    add = commands.add_parser("add", help="write one claim through the gate")
    add.add_argument("user", help="the memory owner (user_id), e.g. alice")
    add.add_argument("text", help="the claim, in plain words")
    add.add_argument("--polarity", default="open", choices=list(POLARITY_MEANINGS))
    add.add_argument("--evidence-grade", default="anecdotal", choices=list(EVIDENCE_GRADE_MEANINGS))
    _scope_arguments(add)
    add.add_argument("--note", help="free text folded into the scope (searched, not a facet)")
    add.add_argument("--tag", action="append", default=[], help="a tag (repeat)")
    add.add_argument("--artifact", action="append", default=[], help="an artifact reference (repeat)")
    add.add_argument("--author")
    add.add_argument("--author-role")
    add.add_argument("--idempotency-key", help="makes a repeat of this command a replay")
    add.add_argument("--json", action="store_true", help="print the wire form")

    health = commands.add_parser("health", help="an owner's Field Maturity Index and its pillars")
    health.add_argument("user", help="the memory owner (user_id), e.g. alice")
    health.add_argument("--window-days", type=int, default=30, help="1..365, default 30")
    health.add_argument("--json", action="store_true", help="print the wire form")

    export = commands.add_parser("export", help="write an owner's whole memory to a file (atlaso-export v1)")
    export.add_argument("user", help="the memory owner (user_id), e.g. alice")
    export.add_argument("-o", "--output", help="the file (gzip when it ends in .gz); stdout when left out")
    export.add_argument("--no-retracted", action="store_true", help="leave out retracted deposits")
    export.add_argument("--json", action="store_true", help="print the export's header as JSON")

    imports = commands.add_parser("import", help="import a file into an owner's memory (ours, or mem0's)")
    imports.add_argument("user", help="the memory owner (user_id) the memory moves to")
    imports.add_argument(
        "file", help="an atlaso-export file (plain or .gz), or with --format mem0 a mem0 export"
    )
    imports.add_argument("--format", choices=list(IMPORT_FORMATS), default="atlaso")
    imports.add_argument("--dry-run", action="store_true", help="report what would happen, write nothing")
    imports.add_argument("--on-gate-reject", choices=list(ON_GATE_REJECT_MEANINGS), default="skip")
    imports.add_argument("--json", action="store_true", help="print the wire form, and no progress bar")

    forget = commands.add_parser("forget", help="forget an owner whole (needs a key with erase)")
    forget.add_argument("user", help="the memory owner (user_id) to forget")
    forget.add_argument("--yes", action="store_true", help="yes: forget it, which cannot be undone")
    forget.add_argument("--json", action="store_true", help="print the wire form")

    mcp = commands.add_parser("mcp", help="serve the memory to agent hosts as MCP tools (stdio by default)")
    mcp.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    mcp.add_argument("--host", default="127.0.0.1", help="streamable-http: the address to listen on")
    mcp.add_argument("--port", type=int, default=8765, help="streamable-http: the port (default 8765)")
    return parser


def _print_json(data: Any, out: TextIO) -> None:
    out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _recall_text(results: SearchResults) -> str:
    lines = [results.explain()]
    for hit in results:
        marks = []
        if hit.has_disagreement:
            marks.append("in conflict")
        elif hit.is_confident:
            marks.append("confident")
        if hit.is_thin_evidence:
            marks.append("thin")
        flags = f" [{', '.join(marks)}]" if marks else ""
        lines.append(f"- {hit.polarity:<10} {hit.evidence_grade:<10} {hit.content}{flags}")
        lines.append(f"  id {hit.id} · bag {hit.bag_id} · score {hit.score:.3f}")
        if hit.conflict_peers:
            lines.append(f"  disagrees with {', '.join(hit.conflict_peers[:5])}")
    return "\n".join(lines)


def _reachable(base_url: str) -> str | None:
    """Why the server at `base_url` cannot be reached, or None when its API answers."""
    try:
        httpx.get(f"{base_url}/api/v1/openapi.json", timeout=5).raise_for_status()
    except httpx.HTTPError as error:
        return f"{type(error).__name__}: {error}"
    return None


def doctor(memory: Memory, out: TextIO, err: TextIO) -> int:
    """Print where the client points, whether a key is set, and what the server says of it.

    The report goes to stdout; a failure ends it with one line on stderr saying what to do.
    """
    settings = memory.settings

    def fail(report: str, reason: str) -> int:
        out.write(report + "\n")
        err.write(f"atlaso doctor: {reason}\n")
        return 1

    out.write(f"atlaso {VERSION}\n")
    out.write(f"base URL: {settings.base_url} (from {settings.base_url_source})\n")
    if settings.api_key is None:
        out.write(f"API key:  not set ({settings.api_key_source} is empty)\n")
        unreachable = _reachable(settings.base_url)
        server = f"not reached ({unreachable})" if unreachable else "reachable (its API answers)"
        return fail(f"server:   {server}", HOW_TO_GET_A_KEY)
    out.write(f"API key:  set (from {settings.api_key_source}), starts {settings.api_key[:12]}…\n")
    started = time.perf_counter()
    try:
        key = memory.key_info()
    except AuthenticationError as error:
        return fail(f"server:   refused the key: {error}", "the key is unknown or revoked; make a new one")
    except (ConnectError, RequestTimeoutError) as error:
        return fail(
            f"server:   not reached: {error}", "start the server (`make run`), or set ATLASO_BASE_URL to it"
        )
    except AtlasoError as error:
        status = f" ({error.status_code})" if error.status_code else ""
        return fail(f"server:   answered with an error{status}: {error}", "see the server's log")
    elapsed = (time.perf_counter() - started) * 1000
    out.write(f"server:   answered GET /api/v1/keys/me in {elapsed:.0f} ms\n")
    out.write(f"key:      {key.name!r} on channel {key.channel!r}, tier {key.tier}\n")
    out.write(f"may:      {', '.join(key.permissions) or 'nothing'}\n")
    confined = f"owners whose user_id starts {key.user_prefix!r}" if key.user_prefix else "every owner"
    out.write(f"reaches:  {confined}\n")
    out.write("ok\n")
    return 0


def _recall(user: UserHandle, args: argparse.Namespace, out: TextIO) -> int:
    results = user.recall(
        args.query,
        limit=args.limit,
        scope=_scope(args),
        include_superseded=args.include_superseded,
        mode=args.mode,
    )
    if args.json:
        _print_json(results.to_dict(), out)
    else:
        out.write(_recall_text(results) + "\n")
    return 0


def _add(user: UserHandle, args: argparse.Namespace, out: TextIO) -> int:
    added = user.add(
        args.text,
        polarity=args.polarity,
        evidence_grade=args.evidence_grade,
        scope=_scope(args, note=True),
        tags=args.tag,
        artifact_refs=args.artifact,
        author=args.author,
        author_role=args.author_role,
        idempotency_key=args.idempotency_key,
    )
    if args.json:
        _print_json(added.to_dict(), out)
    else:
        verb = "already stored (a replay)" if added.is_idempotent_replay else "stored"
        out.write(f"{verb}: {added.id} ({added.deposit.polarity}, {added.deposit.evidence_grade})\n")
    return 0


def _health(user: UserHandle, args: argparse.Namespace, out: TextIO) -> int:
    diagnostics = user.health(window_days=args.window_days)
    if args.json:
        _print_json(diagnostics.to_dict(), out)
    else:
        out.write(diagnostics.explain() + "\n")
        out.write(
            f"coverage {diagnostics.coverage:.2f} · precision {diagnostics.precision:.2f} · "
            f"resolution {diagnostics.resolution:.2f} · density {diagnostics.density:.2f} · "
            f"{diagnostics.deposit_count} live deposits · last {diagnostics.window_days} days\n"
        )
    return 0


def _counts(counts: Mapping[str, int]) -> str:
    """`4 deposits, 1 edge, 0 outcomes`: each kind (named in the plural) counted."""
    return ", ".join(
        f"{value:,} {name.removesuffix('s') if value == 1 else name}" for name, value in counts.items()
    )


def _export(user: UserHandle, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    include = not args.no_retracted
    if args.output:
        header = user.export(args.output, include_retracted=include)
        where = args.output
    else:
        stdout = getattr(out, "buffer", None)
        header = user.export(stdout if stdout is not None else out, include_retracted=include)  # type: ignore[arg-type]
        where = "stdout"
    if args.json:
        (err if not args.output else out).write(json.dumps(header.to_dict(), ensure_ascii=False) + "\n")
    else:
        err.write(f"exported {user.user_id} to {where}: {_counts(header.counts)}\n")
    return 0


def _import(user: UserHandle, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    started = time.perf_counter()
    shown = not args.json and err.isatty()
    bar = import_bar(err, description=f"importing into {user.user_id}") if shown else nullcontext(None)
    with bar as report:
        result = user.import_(
            args.file, format=args.format, dry_run=args.dry_run, on_gate_reject=args.on_gate_reject,
            progress=report,
        )  # fmt: skip
    # A line of no kind (not JSON, cut short, of a kind this format lacks) is in no kind's
    # count, only in failed_lines (the first 100): so many failed at least.
    failed = max(result.failed, len(result.failed_lines))
    if args.json:
        _print_json(result.to_dict(), out)
        return 0 if not failed else 1
    seconds = time.perf_counter() - started
    verb = "would import" if result.dry_run else "imported"
    out.write(f"{verb} into {user.user_id} in {seconds:.1f} s ({result.lines:,} lines):\n")
    for kind in ("deposits", "edges", "retractions", "observations", "outcomes"):
        counts = getattr(result, kind)
        out.write(
            f"  {kind:<13} {counts.committed:>9,} new · {counts.duplicates:,} already there · {counts.failed:,} failed\n"
        )
    if failed > result.failed:
        out.write(f"  {'other lines':<13} {failed - result.failed:>9,} failed: unreadable, or of no kind\n")
    for line in result.failed_lines[:10]:
        err.write(f"line {line.line}: {line.code}: {line.message}\n")
    if failed > 10:
        err.write(f"… {failed - 10:,} more failed lines (--json lists the first 100)\n")
    refused = next((line for line in result.failed_lines if line.code == "gate_rejected"), None)
    if args.on_gate_reject == "abort" and refused is not None:
        err.write(
            f"stopped at line {refused.line} (--on-gate-reject abort): the lines before it "
            f"{'would be' if result.dry_run else 'were'} imported, the lines after it were not read\n"
        )
    return 0 if not failed else 1


def _forget(user: UserHandle, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if not args.yes:
        err.write(
            f"atlaso forget: this deletes every deposit, edge, belief and snapshot of {user.user_id} for good; "
            f"run it again with --yes to do so\n"
        )
        return 2
    result = user.forget(confirm=user.user_id)
    if args.json:
        _print_json(result.to_dict(), out)
    else:
        gone = {"deposits": result.deposits, "edges": result.edges, "observations": result.observations,
                "beliefs": result.beliefs}  # fmt: skip
        keys = f"{result.keys_tombstoned:,} idempotency key{'' if result.keys_tombstoned == 1 else 's'}"
        out.write(
            f"forgot {result.user_id}: {_counts(gone)}; "
            f"{keys} now answer 410 erased for the rest of their 24 h\n"
        )
    return 0


# The commands that act on one owner's memory (`user`).
_OWNER_COMMANDS: dict[str, Callable[[UserHandle, argparse.Namespace, TextIO], int]] = {
    "recall": _recall,
    "add": _add,
    "health": _health,
}
# Those that also speak on stderr (what went where, a progress bar).
_TRANSFER_COMMANDS: dict[str, Callable[[UserHandle, argparse.Namespace, TextIO, TextIO], int]] = {
    "export": _export,
    "import": _import,
    "forget": _forget,
}


def _install_mcp() -> str:
    """The command that installs the `mcp` extra's requirement into the Python running this.

    Typed as printed it works wherever this package came from (a wheel, a checkout), which
    `pip install "atlaso[mcp]"` does only where an index serves atlaso.
    """
    try:
        wanted = [r for r in metadata.requires("atlaso") or () if re.search(r"extra\s*==\s*.mcp.", r)]
    except metadata.PackageNotFoundError:
        wanted = []
    requirement = wanted[0].split(";")[0].strip() if wanted else "mcp"
    return f"{shlex.quote(sys.executable)} -m pip install {shlex.quote(requirement)}"


def _mcp(args: argparse.Namespace, err: TextIO) -> int:
    try:
        from atlaso.mcp_server import serve
    except ModuleNotFoundError as missing:
        if missing.name is None or not missing.name.startswith(("mcp", "pydantic")):
            raise
        err.write(f'atlaso mcp needs the MCP SDK (what pip install "atlaso[mcp]" adds): {_install_mcp()}\n')
        return 1

    serve(transport=args.transport, host=args.host, port=args.port)
    return 0


def _refused(command: str, error: AtlasoError, err: TextIO) -> int:
    """Say on stderr what went wrong (and the gate's reason, when the message lacks it)."""
    err.write(f"atlaso {command}: {error}\n")
    if isinstance(error, AuthenticationError):
        err.write("set ATLASO_API_KEY to a key this server knows; `atlaso doctor` checks it\n")
    elif isinstance(error, PermissionDeniedError):  # a permission it lacks, or owners it cannot reach
        err.write(
            "`atlaso doctor` lists what this key may do and which owners it reaches; an operator makes "
            "keys (`manage.py create_api_key … --perm read --perm write --perm erase`, or the Provenance page)\n"
        )
    reason = getattr(error, "gate_reason", None)
    if reason and reason not in str(error):
        err.write(f"gate: {reason}\n")
    return 1


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = _parser().parse_args(argv)
    if args.command == "mcp":
        return _mcp(args, err)
    try:
        with Memory() as memory:
            if args.command == "doctor":
                return doctor(memory, out, err)
            if args.command in _TRANSFER_COMMANDS:
                return _TRANSFER_COMMANDS[args.command](memory.for_user(args.user), args, out, err)
            return _OWNER_COMMANDS[args.command](memory.for_user(args.user), args, out)
    except AtlasoError as error:
        return _refused(args.command, error, err)
    except OSError as error:
        # A file to import that is not there, a folder to export into that is not: one line.
        name = str(error.filename or "").removesuffix(".part")
        err.write(f"atlaso {args.command}: {error.strerror or error}: {name}\n")
        return 1
