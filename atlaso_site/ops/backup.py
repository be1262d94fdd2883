"""Back up a live Atlaso database with pg_dump, restore it into a new one, and prove the copy equal.

`python -m atlaso_site.ops.backup --source URL --restore-into NAME [--dump FILE]`.

The store keeps taking writes while this runs. The dump reads one snapshot of it (pg_dump's
`--snapshot`, exported by a transaction this script holds open), and every table's
fingerprint (its row count and an order-free sum of its rows' hashes) is taken in that same
snapshot, so the restored copy must match it exactly: a row more or less, or one byte changed
in one row, is a mismatch and the script exits 1. The restore runs in one transaction into a
database that did not exist (it is never a database in use), with the dump's own triggers and
functions; nothing of the source is changed.

Needs psycopg and PostgreSQL's client programs (`pg_dump`, `pg_restore`: on PATH, or
`--pg-bin DIR`), no Django. docs/OPERATIONS.md, "Backups", has the plain commands it wraps.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

# Every ordinary table of the application's schema (the migrations' and Django's own).
TABLES = """
SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND n.nspname = 'public'
ORDER BY 1, 2
"""
# An order-free fingerprint of a table: its rows, and the sum of 60 bits of each row's md5.
FINGERPRINT = (
    "SELECT count(*), coalesce(sum(('x' || left(md5(t::text), 15))::bit(60)::bigint), 0) FROM {} AS t"
)


@dataclass(frozen=True)
class Fingerprint:
    rows: int
    checksum: int


def fingerprints(connection: psycopg.Connection) -> dict[str, Fingerprint]:
    """Every table's fingerprint, read in the connection's current transaction."""
    found = {}
    for schema, table in connection.execute(TABLES).fetchall():
        query = sql.SQL(FINGERPRINT).format(sql.Identifier(schema, table))
        rows, checksum = connection.execute(query).fetchone()
        found[f"{schema}.{table}"] = Fingerprint(int(rows), int(checksum))
    return found


def program(name: str, pg_bin: str | None) -> str:
    found = str(Path(pg_bin) / name) if pg_bin else shutil.which(name)
    if not found or not Path(found).exists():
        raise SystemExit(f"{name} not found: install PostgreSQL's client programs or pass --pg-bin")
    return found


def with_database(url: str, name: str) -> str:
    """The same server's URL naming another database."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + name))


def dump(source: str, path: Path, *, pg_bin: str | None) -> tuple[dict[str, Fingerprint], float]:
    """Dump one snapshot of `source` to `path`; its tables' fingerprints and the seconds it took."""
    with psycopg.connect(source) as snapshot_holder:
        snapshot_holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        snapshot = snapshot_holder.execute("SELECT pg_export_snapshot()").fetchone()[0]
        started = time.monotonic()
        subprocess.run(
            [program("pg_dump", pg_bin), "--format=custom", f"--snapshot={snapshot}", f"--file={path}",
             "--dbname", source],
            check=True,
        )  # fmt: skip
        took = time.monotonic() - started
        expected = fingerprints(snapshot_holder)
        snapshot_holder.execute("COMMIT")
    return expected, took


def restore(path: Path, target: str, *, pg_bin: str | None) -> float:
    """Restore the dump into a new database `target`, in one transaction; the seconds it took.

    `target` must not exist: it is created here.
    """
    name = urlsplit(target).path.lstrip("/")
    with psycopg.connect(with_database(target, "postgres"), autocommit=True) as server:
        server.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    started = time.monotonic()
    subprocess.run(
        [program("pg_restore", pg_bin), "--exit-on-error", "--single-transaction", "--no-owner",
         "--dbname", target, str(path)],
        check=True,
    )  # fmt: skip
    return time.monotonic() - started


def compare(expected: dict[str, Fingerprint], restored: dict[str, Fingerprint]) -> list[str]:
    """One line per table, and a last line; lines for tables that differ start with `MISMATCH`."""
    lines = []
    for table in sorted(expected.keys() | restored.keys()):
        want, got = expected.get(table), restored.get(table)
        if want == got:
            lines.append(f"  {table:<44} {want.rows:>10,} rows  same")
        else:
            lines.append(f"MISMATCH {table}: dumped {want}, restored {got}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--source", required=True, help="postgres://… of the live database")
    parser.add_argument("--restore-into", required=True, metavar="NAME",
                        help="a new database on the source's server, or a postgres://… URL on another")  # fmt: skip
    parser.add_argument("--dump", type=Path, help="keep the dump here (default: a temporary file, removed)")
    parser.add_argument("--pg-bin", help="the folder of pg_dump and pg_restore (default: PATH)")
    args = parser.parse_args(argv)
    target = (
        args.restore_into if "://" in args.restore_into else with_database(args.source, args.restore_into)
    )
    folder = None
    path = args.dump
    if path is None:
        folder = Path(tempfile.mkdtemp(prefix="atlaso-backup-"))
        path = folder / "atlaso.dump"
    try:
        expected, dumped_in = dump(args.source, path, pg_bin=args.pg_bin)
        print(f"dumped one snapshot to {path}: {path.stat().st_size / 1e6:.1f} MB in {dumped_in:.1f} s")
        restored_in = restore(path, target, pg_bin=args.pg_bin)
        print(f"restored into {urlsplit(target).path.lstrip('/')} in {restored_in:.1f} s")
        with psycopg.connect(target) as copy:
            restored = fingerprints(copy)
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
    lines = compare(expected, restored)
    print("\n".join(lines))
    mismatched = sum(line.startswith("MISMATCH") for line in lines)
    rows = sum(f.rows for f in expected.values())
    if mismatched:
        print(f"{mismatched} of {len(lines)} tables differ from the snapshot dumped")
        return 1
    print(f"every table matches the snapshot dumped: {len(expected)} tables, {rows:,} rows")
    return 0


if __name__ == "__main__":
    sys.exit(main())
