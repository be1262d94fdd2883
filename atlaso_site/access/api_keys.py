"""API-key authentication and the access checks every operation makes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from weakref import WeakKeyDictionary

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Model
from django.db.models.expressions import Col
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer

from atlaso_site.access.models import ApiKey, Channel, ProvenanceTier
from atlaso_site.lib.errors import FORBIDDEN, AtlasoError
from atlaso_site.lib.secrets import hash_secret


def _columns(model: type[Model], alias: str) -> list[tuple[str, Col, list[Any]]]:
    """Each concrete field of `model` as (attname, column, the converters the ORM would apply)."""
    columns = []
    for field in model._meta.concrete_fields:
        column = field.get_col(alias)
        converters = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
        columns.append((field.attname, column, converters))
    return columns


def _instance(model: type[Model], columns: list[tuple[str, Col, list[Any]]], values: Sequence[Any]) -> Any:
    converted = []
    for (_, column, converters), value in zip(columns, values, strict=True):
        for convert in converters:
            value = convert(value, column, connection)
        converted.append(value)
    return model.from_db(connection.alias, [name for name, _, _ in columns], converted)


# Per database connection (one per thread): its statement and each model's columns.
_statements: WeakKeyDictionary[Any, tuple[str, list[list[tuple[str, Col, list[Any]]]]]] = WeakKeyDictionary()
_KEY_MODELS = ((ApiKey, "k"), (Channel, "c"), (ProvenanceTier, "t"))


def _statement() -> tuple[str, list[list[tuple[str, Col, list[Any]]]]]:
    found = _statements.get(connections[DEFAULT_DB_ALIAS])  # this thread's connection
    if found is not None:
        return found
    columns = [_columns(model, alias) for model, alias in _KEY_MODELS]
    select = ", ".join(
        f"{alias}.{connection.ops.quote_name(column.target.column)}"
        for (_, alias), model_columns in zip(_KEY_MODELS, columns, strict=True)
        for _, column, _ in model_columns
    )
    sql = (
        f"SELECT {select} FROM {ApiKey._meta.db_table} k "
        f"JOIN {Channel._meta.db_table} c ON c.id = k.channel_id "
        f"JOIN {ProvenanceTier._meta.db_table} t ON t.id = c.tier_id "
        "WHERE k.secret_hash = %s"
    )
    _statements[connections[DEFAULT_DB_ALIAS]] = (sql, columns)
    return sql, columns


def key_by_secret_hash(secret_hash: str) -> ApiKey | None:
    """The key with its channel and tier, in one statement written once per connection.

    The same rows `ApiKey.objects.select_related("channel__tier").get(...)` reads, with the
    same conversions, built here because every API request asks: building the query through
    the ORM cost 0.5 ms of the ~9 ms of Python a request takes (executing it, 0.13 ms).
    """
    sql, (key_columns, channel_columns, tier_columns) = _statement()
    with connection.cursor() as cursor:
        cursor.execute(sql, [secret_hash])
        row = cursor.fetchone()
    if row is None:
        return None
    channel_at = len(key_columns)
    tier_at = channel_at + len(channel_columns)
    key = _instance(ApiKey, key_columns, row[:channel_at])
    channel = _instance(Channel, channel_columns, row[channel_at:tier_at])
    channel.tier = _instance(ProvenanceTier, tier_columns, row[tier_at:])
    key.channel = channel
    return key


MiB = 1024 * 1024


@dataclass(frozen=True)
class BodyAllowance:
    """How large an operation's body may be, decided before a byte of it is read.

    `bytes` bounds what is read (never more than DATA_UPLOAD_MAX_MEMORY_SIZE, unless `streamed`);
    `members` bounds its shape: the commas outside strings, so array elements and object members
    in all, counted before the JSON is parsed, since parsing and validating millions of tiny
    values costs seconds and gigabytes where the same bytes as one string cost nothing.
    `streamed`: the operation reads its body as it arrives, a piece at a time (an import), so
    the server hands it over unread instead of reading it ahead, and no memory bound applies.
    """

    bytes: int
    members: int
    streamed: bool = False


# One claim, observation, tier or channel. The widest legal one (8,000 characters at 6 bytes
# each, every list at its limit) is under 100 kB and has under 200 members; a body this size is
# held in memory while it is read (atlaso_site/gunicorn_worker.py), never written to disk.
SMALL_BODY = BodyAllowance(bytes=1 * MiB, members=1_000)
Permission = str | Callable[[HttpRequest], str]


class ApiKeyAuth(HttpBearer):
    """`Authorization: Bearer <key>` and what the operation asks of the key, checked first.

    Checked before the operation reads its path, query or body (api.md: "Authentication, the
    owner check and the permission check come before everything else").

    A missing, unknown or revoked key answers 401; a key without `permission`, or confined to
    a prefix the path's `user_id` does not start with (`owner`), or confined at all for a
    deployment-wide operation (`unconfined`), answers 403. The same object says how large the
    operation's body may be (`body`), which the server reads only after this check passes.
    """

    def __init__(
        self,
        permission: Permission | None = None,
        *,
        owner: bool = False,
        unconfined: bool = False,
        body: BodyAllowance = SMALL_BODY,
    ) -> None:
        super().__init__()
        self.permission = permission
        self.owner = owner
        self.unconfined = unconfined
        self.body = body

    def __call__(self, request: HttpRequest) -> ApiKey | None:
        if getattr(request, "admitted_by", None) is self:
            return request.auth  # type: ignore[attr-defined]  # checked already, before the body
        key = super().__call__(request)
        if key is not None:
            self.check(request, key)
            request.admitted_by = self  # type: ignore[attr-defined]
        return key

    def authenticate(self, request: HttpRequest, token: str) -> ApiKey | None:
        if not token or len(token) > 200:
            return None
        key = key_by_secret_hash(hash_secret(token))
        if key is None or key.is_revoked:
            return None
        now = timezone.now()
        stale = timedelta(seconds=settings.API_KEY_LAST_USED_RESOLUTION_SECONDS)
        if key.last_used_at is None or now - key.last_used_at > stale:
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
            key.last_used_at = now
        return key

    def check(self, request: HttpRequest, key: ApiKey) -> None:
        """403 unless `key` may make this request; the owner is read from the path, unparsed.

        A prefix mismatch answers 403 whether or not the owner exists, or even whether the
        user_id is well formed, so a confined key never learns which owners live outside its
        prefix; a malformed user_id the key could reach is the operation's 422 (wire.UserId).
        """
        permission = self.permission(request) if callable(self.permission) else self.permission
        if permission is not None and not key.has_permission(permission):
            raise AtlasoError(FORBIDDEN, f"this API key lacks the {permission!r} permission")
        if self.unconfined and key.user_prefix:
            raise AtlasoError(
                FORBIDDEN,
                f"this API key is confined to user_ids starting {key.user_prefix!r}; deployment-wide "
                f"operations need a key with {permission!r} confined to no prefix",
            )
        if self.owner:
            match = request.resolver_match
            user_id = str(match.kwargs.get("user_id", "")) if match else ""
            if not key.may_access(user_id):
                raise AtlasoError(
                    FORBIDDEN, f"this API key is confined to user_ids starting {key.user_prefix!r}"
                )


def api_body_allowance(request: HttpRequest) -> BodyAllowance:
    """The body the operation that admitted this request may read (none before one has)."""
    rule = getattr(request, "admitted_by", None)
    if not isinstance(rule, ApiKeyAuth):
        return BodyAllowance(bytes=0, members=0)
    if rule.body.streamed:
        return rule.body
    ceiling = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return BodyAllowance(bytes=min(rule.body.bytes, ceiling), members=rule.body.members)


def erase_when_hard(request: HttpRequest) -> str:
    """Retracting needs `write`; erasing (`?mode=hard`) needs `erase`."""
    return "erase" if request.GET.get("mode") == "hard" else "write"


def key_of(request: HttpRequest) -> ApiKey:
    """The key the operation's ApiKeyAuth admitted."""
    return request.auth  # type: ignore[attr-defined]


# The rules the operations name (`auth=`); an operation with its own body allowance makes its own.
ANY_KEY = ApiKeyAuth()
READ = ApiKeyAuth("read", owner=True)
WRITE = ApiKeyAuth("write", owner=True)
RETRACT = ApiKeyAuth(erase_when_hard, owner=True)
ANY_OWNER_READ = ApiKeyAuth("read")
UNCONFINED_READ = ApiKeyAuth("read", unconfined=True)
GLOBAL_ADMIN = ApiKeyAuth("admin", unconfined=True)
