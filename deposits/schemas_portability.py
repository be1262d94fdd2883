"""The HTTP shapes of export and import (portability.md)."""

from __future__ import annotations

from typing import Annotated, Literal

from ninja import Schema
from pydantic import BeforeValidator, Field

from atlaso_site.wire import OutSchema
from deposits.schemas import BulkFailureError, _error_object


class ExportQuery(Schema):
    include_retracted: bool = True


class ImportQuery(Schema):
    format: Literal["atlaso", "mem0"] = "atlaso"
    dry_run: bool = False
    on_gate_reject: Literal["skip", "abort"] = "skip"


class KindCountsOut(Schema):
    committed: int
    duplicates: int
    failed: int


class FailedLineOut(Schema):
    line: int = Field(
        description="The line's number in the body (the header is line 1; for mem0, the memory's)."
    )
    error: Annotated[BulkFailureError, BeforeValidator(_error_object)]


class ImportResultOut(OutSchema):
    kind: Literal["import_result"]
    deposits: KindCountsOut
    edges: KindCountsOut
    retractions: KindCountsOut
    observations: KindCountsOut
    outcomes: KindCountsOut
    failed_lines: list[FailedLineOut] = Field(description="The first 100 failed lines.")
    is_partial: bool
    dry_run: bool
    lines: int = Field(description="Lines read, the header included.")
