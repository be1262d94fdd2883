"""The HTTP shapes of the diagnostics API."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from atlaso_site.wire import NO_NUL, DepositOut, OutSchema, PageQuery, WireId, WireTime
from diagnostics.job_runner import JOBS


class DiagnosticsOut(OutSchema):
    kind: Literal["diagnostics"]
    fmi: int
    coverage: float
    precision: float
    resolution: float
    density: float
    window_days: int
    deposit_count: int
    explain: str

    @staticmethod
    def resolve_coverage(diagnostics: Any) -> float:
        return diagnostics.pillars.coverage

    @staticmethod
    def resolve_precision(diagnostics: Any) -> float:
        return diagnostics.pillars.precision

    @staticmethod
    def resolve_resolution(diagnostics: Any) -> float:
        return diagnostics.pillars.resolution

    @staticmethod
    def resolve_density(diagnostics: Any) -> float:
        return diagnostics.pillars.density


class PeekOut(OutSchema):
    kind: Literal["peek_view"]
    user_id: str
    deposits: list[DepositOut]
    total_count: int
    fmi: int
    has_recent_disagreements: bool


class HealthQuery(Schema):
    window_days: int = Field(30, ge=1, le=365)


class PeekQuery(Schema):
    limit: int = Field(10, ge=1, le=200)


class TierCalibrationOut(Schema):
    outcomes: int
    brier: float | None
    ece: float | None


class DiagramBinOut(Schema):
    bin: int
    confidence: float
    frequency: float
    count: int


class CalibrationOut(OutSchema):
    kind: Literal["calibration"]
    outcomes: int
    brier: float | None
    ece: float | None
    per_tier: dict[str, TierCalibrationOut]
    diagram: list[DiagramBinOut]
    is_frequency: bool


class DaysQuery(Schema):
    days: int = Field(30, ge=1, le=365)


class SnapshotOut(BaseModel):
    """A plain pydantic model, not a ninja Schema, for the speed of its thousands of points.

    They are read by attribute in pydantic's compiled validator instead of one Python attribute
    lookup per field.
    """

    model_config = ConfigDict(from_attributes=True)

    taken_at: WireTime
    fmi: int
    coverage: float
    precision: float
    resolution: float
    density: float
    deposit_count: int
    bag_count: int
    conflict_bag_count: int
    uncertain_belief_count: int
    recall_count: int


class DeploymentSnapshotOut(SnapshotOut):
    owner_count: int


class BacklogOut(Schema):
    open_conflicts: int
    oldest_open_started_at: WireTime | None
    resolved_in_window: int
    median_hours_to_resolution: float | None


class HealthHistoryOut(OutSchema):
    kind: Literal["health_history"]
    user_id: str
    days: int
    points: list[SnapshotOut]
    backlog: BacklogOut


class DeploymentHealthOut(OutSchema):
    kind: Literal["deployment_health"]
    current: DeploymentSnapshotOut
    points: list[DeploymentSnapshotOut]
    backlog: BacklogOut


# --- Job runs ----------------------------------------------------------------------------------

# A job's name in a path: the schema lists the jobs; any other name is a 404.
JobName = Annotated[str, WithJsonSchema({"type": "string", "enum": sorted(JOBS)})]

JobRunStatus = Literal["queued", "running", "succeeded", "failed", "skipped", "lost", "stalled"]
JobTrigger = Literal["beat", "command", "tier_change", "channel_change", "dashboard", "api"]


class JobRunOut(OutSchema):
    kind: Literal["job_run"]
    id: WireId
    name: str
    trigger: JobTrigger
    status: JobRunStatus
    queued_at: WireTime
    started_at: WireTime | None
    finished_at: WireTime | None
    done: int
    total: int
    counts: dict[str, Any]
    error: str | None

    @staticmethod
    def resolve_status(run: Any) -> str:
        # As reported: a run that stopped moving is `lost` or `stalled`, not what its row says.
        return run.reported_status


class JobRunPageOut(OutSchema):
    kind: Literal["job_run_page"]
    items: list[JobRunOut]
    total: int


class JobRunQuery(PageQuery):
    name: str | None = Field(None, max_length=64, pattern=NO_NUL)
    status: JobRunStatus | None = None
