"""The PostgreSQL functions the migrations install, read back, beside the code that spells them."""

from __future__ import annotations

from django.db import connection

DOLLAR_QUOTE = "$function$"


def installed_body(name: str) -> str:
    """The body of the function `name` as PostgreSQL holds it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT prosrc FROM pg_proc WHERE proname = %s", [name])
        (body,) = cursor.fetchone()
    return body


def spelled_body(create_sql: str) -> str:
    """The body between the `$function$` quotes of a CREATE FUNCTION statement."""
    return create_sql[create_sql.index(DOLLAR_QUOTE) + len(DOLLAR_QUOTE) : create_sql.rindex(DOLLAR_QUOTE)]
