"""`ensure_database`: the PostgreSQL database DATABASE_URL names, made if it is not there yet.

`make run` (and `make bench`) run it before `migrate`, so that pointing DATABASE_URL at a server
is the whole set-up: the database is created when the role may create one, and otherwise the
command says what to do instead of a driver's traceback. SQLite needs nothing (its file is made
on first use).
"""

from __future__ import annotations

from typing import Any

import psycopg
from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS, connections
from psycopg import sql

# The database every PostgreSQL server has, from which another can be looked up and created.
MAINTENANCE_DATABASE = "postgres"


class Command(BaseCommand):
    help = "Create the PostgreSQL database DATABASE_URL names if it does not exist (SQLite: nothing)."
    requires_system_checks: list[str] = []

    def handle(self, *args: Any, **options: Any) -> None:
        connection = connections[DEFAULT_DB_ALIAS]
        if connection.vendor != "postgresql":
            return
        # The connection's own parameters (host, port, user, password, TLS), as plain conninfo.
        params = {k: v for k, v in connection.get_connection_params().items() if isinstance(v, str)}
        name = params["dbname"]
        try:
            psycopg.connect(**params, connect_timeout=10).close()
            return
        except psycopg.OperationalError as exc:
            refusal = exc
        where = f"{params.get('host') or 'localhost'}:{params.get('port') or 5432}"
        try:
            with psycopg.connect(
                **{**params, "dbname": MAINTENANCE_DATABASE}, autocommit=True, connect_timeout=10
            ) as admin:
                if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
                    # It is there, so the first refusal was about something else (a password, a
                    # grant, pg_hba.conf): say that one.
                    raise CommandError(f"cannot connect to the database {name!r} at {where}: {refusal}")
                admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        except psycopg.errors.InsufficientPrivilege:
            user = params.get("user") or "this role"
            raise CommandError(
                f"the database {name!r} does not exist at {where}, and {user!r} may not create it: "
                f"create it (createdb -h {params.get('host') or 'localhost'} {name}) or set "
                "DATABASE_URL to one that exists"
            ) from None
        except psycopg.OperationalError:
            # Not even the maintenance database answers: the server, its address or the role.
            raise CommandError(
                f"cannot connect to PostgreSQL at {where} (DATABASE_URL): {refusal}".rstrip()
            ) from None
        self.stdout.write(f"Created the PostgreSQL database {name!r} at {where}")
