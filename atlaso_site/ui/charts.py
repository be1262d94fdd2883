"""Charts drawn on the server: scales, ticks and SVG paths computed here, drawn by templates/charts/.

Pure Python (no app, no database): a view turns what a selector returned into `Series` of
(moment, value) points or reliability `Bin`s, and `step_chart` / `reliability_chart` return
everything the template needs, in the SVG's own coordinates. Snapshots are drawn as steps: a
value holds until the next point (an owner with no activity keeps its last snapshot), and the
last one holds until the end of the window.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from itertools import pairwise

NOT_ENOUGH_HISTORY = "Not enough history yet: snapshots are taken every 15 minutes by recompute_diagnostics"
# More points than this in a series are thinned (by time slot, keeping each slot's last value):
# a chart is a few hundred pixels wide, and 90 days of 15-minute snapshots are 8,640 points.
MAX_POINTS = 400
# Every point is marked with a dot while there are few of them; past that only the first and
# the newest are (a dense line is its own mark).
MAX_MARKS = 12
SERIES_COLOURS = 6

# Tick spacings on a time axis, smallest first: the first giving at most `max_ticks` wins.
TIME_STEPS = tuple(
    timedelta(hours=h) for h in (1, 2, 3, 6, 12, 24, 48, 24 * 5, 24 * 7, 24 * 15, 24 * 30, 24 * 60)
)

type Point = tuple[datetime, float]


@dataclass(frozen=True, slots=True)
class Tick:
    """A tick on an axis: where (SVG units), what it says, and a longer text on hover."""

    position: float
    label: str
    title: str = ""
    # Kept on a phone's narrower screen, where the chart is drawn smaller with larger labels.
    phone: bool = True


@dataclass(frozen=True, slots=True)
class Series:
    """One line: a name for the legend and its (moment, value) points, oldest first."""

    label: str
    points: Sequence[Point]
    # After a value in the legend and on hover: "%" for a pillar.
    unit: str = ""


@dataclass(frozen=True, slots=True)
class Mark:
    x: float
    y: float
    title: str


@dataclass(frozen=True, slots=True)
class DrawnSeries:
    """A series in SVG units: its step path, its dots, its colour slot and its last value."""

    label: str
    colour: int
    path: str
    marks: tuple[Mark, ...]
    last_label: str


@dataclass(frozen=True, slots=True)
class Plot:
    """The SVG's size and, inside it, the plotting area (the rest holds the axes' labels)."""

    width: int
    height: int
    left: int
    top: int
    right: int
    bottom: int

    @property
    def plot_width(self) -> int:
        return self.right - self.left


@dataclass(frozen=True, slots=True)
class ChartFrame:
    """The frame every chart shares: what it is, where it plots, and what it shows without data.

    Its id, title and accessible description, the plot area, the axes with their labels and ticks,
    and the message shown instead when there is too little data.
    """

    chart_id: str
    title: str
    description: str
    plot: Plot
    x_label: str
    y_label: str
    x_ticks: tuple[Tick, ...] = ()
    y_ticks: tuple[Tick, ...] = ()
    empty_message: str = ""

    @property
    def is_empty(self) -> bool:
        return bool(self.empty_message)


@dataclass(frozen=True, slots=True)
class LineChart(ChartFrame):
    """What templates/charts/line.html draws."""

    series: tuple[DrawnSeries, ...] = ()

    @property
    def has_legend(self) -> bool:
        return len(self.series) > 1

    @property
    def phone_scale(self) -> float:
        """How many SVG units one CSS pixel is on a phone.

        There the chart fills a card about PHONE_WIDTH pixels wide, and the page's CSS draws labels
        and lines that much larger.
        """
        return round(max(1.0, self.plot.width / PHONE_WIDTH), 2)


@dataclass(frozen=True, slots=True)
class Bin:
    """One bin of a reliability diagram: a range of stated probability and what came of it.

    It holds that range, the mean stated probability in it, the observed frequency and how many
    outcomes it holds.
    """

    low: float
    high: float
    confidence: float
    frequency: float
    count: int


@dataclass(frozen=True, slots=True)
class DrawnBin:
    x: float
    y: float
    width: float
    height: float
    dot_x: float
    dot_y: float
    title: str
    count_label: str

    @property
    def middle(self) -> float:
        return round(self.x + self.width / 2, 1)


@dataclass(frozen=True, slots=True)
class ReliabilityChart(ChartFrame):
    """What templates/charts/reliability.html draws: a reliability diagram.

    Bars of observed frequency per bin, a dot at each bin's mean stated probability, and the
    diagonal a calibrated memory would follow.
    """

    bins: tuple[DrawnBin, ...] = ()
    diagonal: str = ""
    legend: tuple[str, ...] = field(default=("observed frequency", "mean stated probability", "calibrated"))


def linear(domain: tuple[float, float], span: tuple[float, float]) -> Callable[[float], float]:
    """The linear map taking `domain` onto `span` (a flat domain maps to the span's middle)."""
    (d0, d1), (r0, r1) = domain, span
    if d1 == d0:
        return lambda value: (r0 + r1) / 2
    factor = (r1 - r0) / (d1 - d0)
    return lambda value: r0 + (value - d0) * factor


def nice_step(span: float, count: int) -> float:
    """A round spacing (1, 2, 2.5 or 5 × 10^k) giving about `count` intervals over `span`."""
    if span <= 0:
        return 1.0
    raw = span / max(1, count)
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * power * (1 + 1e-9):
            return factor * power
    return 10 * power


def nice_ticks(low: float, high: float, count: int = 4) -> list[float]:
    """Round values covering [low, high], about `count` intervals, ends included."""
    if high < low:
        low, high = high, low
    if high == low:
        high = low + 1
    step = nice_step(high - low, count)
    start = math.floor(low / step + 1e-9) * step
    ticks = []
    value = start
    while value < high + step * (1 - 1e-9):
        ticks.append(round(value, 10))
        if value >= high - 1e-9:
            break
        value += step
    return ticks


def ago_label(span: timedelta) -> str:
    """A tick's distance from now in the viewer's terms: "now", "6 h ago", "3 d ago"."""
    seconds = round(span.total_seconds())
    if seconds <= 0:
        return "now"
    if seconds % 86400 == 0:
        return f"{seconds // 86400} d ago"
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h ago"
    return f"{seconds // 60} min ago"


def exact(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def time_ticks(start: datetime, end: datetime, *, max_ticks: int = 8) -> list[tuple[datetime, str, str]]:
    """Ticks counted back from `end` (now) in round steps: (moment, "3 d ago", exact time)."""
    span = end - start
    step = next((s for s in TIME_STEPS if span / s <= max_ticks - 1), TIME_STEPS[-1])
    ticks = []
    moment = end
    while moment >= start - timedelta(seconds=1):
        ticks.append((moment, ago_label(end - moment), exact(moment)))
        moment -= step
    return list(reversed(ticks))


def thin(
    points: Sequence[Point], *, start: datetime, end: datetime, max_points: int = MAX_POINTS
) -> list[Point]:
    """The points a step line needs: repeats dropped, and at most `max_points`, by time slot.

    A step line only changes where the value changes, so a repeated value adds nothing. When
    more than `max_points` changes remain, each of `max_points` equal slots of the window keeps
    its last point: what the line holds at the end of the slot.
    """
    kept: list[Point] = []
    for moment, value in points:
        if kept and kept[-1][1] == value:
            continue
        kept.append((moment, value))
    if points and kept[-1][0] != points[-1][0]:
        # The newest point repeats a value, but it is the newest snapshot: keep it as a mark.
        kept.append((points[-1][0], points[-1][1]))
    if len(kept) <= max_points:
        return kept
    return _last_per_slot(kept, start=start, end=end, slots=max_points)


def _last_per_slot(points: list[Point], *, start: datetime, end: datetime, slots: int) -> list[Point]:
    """The points thinned to one for each of `slots` equal slots of the window, and the newest.

    A slot's point is its first moment with its last value; the newest point is kept as it is.
    """
    slot = (end - start) / slots
    by_slot: dict[int, Point] = {}
    for moment, value in points:
        index = max(0, min(slots - 1, int((moment - start) / slot)))
        if index not in by_slot:
            by_slot[index] = (moment, value)
        else:
            # The slot's first moment with its last value: the step starts where the slot does.
            by_slot[index] = (by_slot[index][0], value)
    thinned = [by_slot[index] for index in sorted(by_slot)]
    if thinned[-1][0] != points[-1][0]:
        thinned.append(points[-1])
    return thinned


def step_path(xy: Sequence[tuple[float, float]], end_x: float) -> str:
    """An SVG path: each value held until the next point's x, the last one until `end_x`."""
    if not xy:
        return ""
    parts = [f"M{xy[0][0]:.1f},{xy[0][1]:.1f}"]
    for (_, y0), (x1, y1) in pairwise(xy):
        parts.append(f"H{x1:.1f}")
        if y1 != y0:
            parts.append(f"V{y1:.1f}")
    if end_x > xy[-1][0]:
        parts.append(f"H{end_x:.1f}")
    return "".join(parts)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "chart"


# A chart's card on a 390-pixel phone is about this many CSS pixels wide; it shows this many
# time labels beside the first.
PHONE_WIDTH = 334
PHONE_X_LABELS = 3


def step_chart(
    series: Sequence[Series],
    *,
    title: str,
    start: datetime,
    end: datetime,
    y_label: str,
    x_label: str = "",
    y_range: tuple[float, float] | None = None,
    y_format: Callable[[float], str] = lambda value: f"{value:.0f}",
    chart_id: str | None = None,
    size: tuple[int, int] = (720, 240),
    empty_message: str = NOT_ENOUGH_HISTORY,
) -> LineChart:
    """Lines of snapshot values over [start, end] as steps, with axes, ticks and a legend.

    Empty (the template says `empty_message`) while no series has two points inside the window.
    `y_range` fixes the value axis (FMI 0..100); without it the axis starts at 0 and rises to
    round above the largest value.
    """
    width, height = size
    plot = Plot(width=width, height=height, left=48, top=12, right=width - 16, bottom=height - 34)
    chart_id = chart_id or slug(title)
    inside = [_within(s, start, end) for s in series]
    x_text = x_label or f"time (last {ago_label(end - start).removesuffix(' ago')}, now at the right)"
    if max((len(s.points) for s in inside), default=0) < 2:
        return LineChart(
            chart_id=chart_id,
            title=title,
            description=f"{title}: {empty_message}",
            plot=plot,
            x_label=x_text,
            y_label=y_label,
            empty_message=empty_message,
        )
    y_values = _value_ticks(inside, y_range)
    to_x = linear((0.0, (end - start).total_seconds()), (plot.left, plot.right))
    to_y = linear((y_values[0], y_values[-1]), (plot.bottom, plot.top))

    def to_xy(moment: datetime, value: float) -> tuple[float, float]:
        return to_x((moment - start).total_seconds()), to_y(value)

    drawn = []
    for index, one in enumerate(inside):
        if points := thin(one.points, start=start, end=end):
            drawn.append(_drawn(one, points, index, list(itertools.starmap(to_xy, points)), plot, y_format))
    # The last point, not "now": a snapshot's value, which the line holds until the next one.
    names = ", ".join(f"{s.label} {s.last_label} at the last point" for s in drawn)
    return LineChart(
        chart_id=chart_id,
        title=title,
        description=f"{title} over the {x_text}: {names}.",
        plot=plot,
        x_label=x_text,
        y_label=y_label,
        x_ticks=_time_axis(start, end, plot, to_x),
        y_ticks=tuple(Tick(round(to_y(value), 1), y_format(value)) for value in y_values),
        series=tuple(drawn),
    )


def _within(series: Series, start: datetime, end: datetime) -> Series:
    """The series' points inside [start, end], their values as floats."""
    points = [(moment, float(value)) for moment, value in series.points if start <= moment <= end]
    return Series(series.label, points, series.unit)


def _value_ticks(series: Sequence[Series], y_range: tuple[float, float] | None) -> list[float]:
    """The value axis's ticks: over `y_range` when given, else from 0 to round above the largest."""
    if y_range is not None:
        return nice_ticks(*y_range)
    top = max(value for s in series for _, value in s.points)
    # Counts: at least 0..4, so every tick is a whole number.
    return nice_ticks(0, max(top, 4))


def _drawn(
    series: Series,
    points: Sequence[Point],
    index: int,
    xy: Sequence[tuple[float, float]],
    plot: Plot,
    y_format: Callable[[float], str],
) -> DrawnSeries:
    """One series' step line through `xy` (its thinned `points` in SVG units), with its dots."""
    chosen = range(len(points)) if len(points) <= MAX_MARKS else (0, len(points) - 1)
    marks = tuple(
        Mark(
            round(xy[i][0], 1),
            round(xy[i][1], 1),
            f"{series.label} {y_format(points[i][1])}{series.unit} at {exact(points[i][0])}",
        )
        for i in chosen
    )
    return DrawnSeries(
        label=series.label,
        colour=index % SERIES_COLOURS,
        path=step_path(xy, plot.right),
        marks=marks,
        last_label=f"{y_format(points[-1][1])}{series.unit}",
    )


def _time_axis(
    start: datetime, end: datetime, plot: Plot, to_x: Callable[[float], float]
) -> tuple[Tick, ...]:
    """The time axis's ticks, counted back from `end`, with those a phone keeps."""
    # About one label per 80 units of width, so labels never run into each other; on a phone,
    # where labels are drawn phone_scale times larger, every few of them (the first and last kept).
    moments = time_ticks(start, end, max_ticks=max(3, plot.plot_width // 80))
    every = max(1, math.ceil((len(moments) - 1) / PHONE_X_LABELS))
    return tuple(
        Tick(
            round(to_x((moment - start).total_seconds()), 1),
            label,
            title,
            phone=i % every == 0 or i == len(moments) - 1,
        )
        for i, (moment, label, title) in enumerate(moments)
    )


def reliability_chart(
    bins: Sequence[Bin],
    *,
    title: str,
    empty_message: str,
    chart_id: str | None = None,
    size: tuple[int, int] = (360, 300),
) -> ReliabilityChart:
    """A reliability diagram: observed frequency against stated probability, both 0..1."""
    width, height = size
    plot = Plot(width=width, height=height, left=44, top=12, right=width - 14, bottom=height - 40)
    chart_id = chart_id or slug(title)
    x_label, y_label = "stated probability", "observed frequency"
    to_x = linear((0.0, 1.0), (plot.left, plot.right))
    to_y = linear((0.0, 1.0), (plot.bottom, plot.top))
    values = [i / 5 for i in range(6)]
    x_ticks = tuple(Tick(round(to_x(v), 1), f"{v:.1f}") for v in values)
    y_ticks = tuple(Tick(round(to_y(v), 1), f"{v:.1f}") for v in values)
    if not bins:
        return ReliabilityChart(
            chart_id=chart_id,
            title=title,
            description=f"{title}: {empty_message}",
            plot=plot,
            x_label=x_label,
            y_label=y_label,
            x_ticks=x_ticks,
            y_ticks=y_ticks,
            diagonal=f"M{to_x(0):.1f},{to_y(0):.1f}L{to_x(1):.1f},{to_y(1):.1f}",
            empty_message=empty_message,
        )
    drawn = []
    for one in bins:
        left, right = to_x(one.low) + 1, to_x(one.high) - 1
        top = to_y(one.frequency)
        drawn.append(
            DrawnBin(
                x=round(left, 1),
                y=round(top, 1),
                width=round(max(1.0, right - left), 1),
                height=round(max(0.0, plot.bottom - top), 1),
                dot_x=round(to_x(one.confidence), 1),
                dot_y=round(to_y(one.frequency), 1),
                title=(
                    f"stated {one.low:.1f}–{one.high:.1f} (mean {one.confidence:.2f}): "
                    f"{one.frequency:.0%} of {one.count} confirmed"
                ),
                count_label=f"n={one.count}",
            )
        )
    summary = "; ".join(b.title for b in drawn)
    return ReliabilityChart(
        chart_id=chart_id,
        title=title,
        description=f"{title}: {summary}. A calibrated memory follows the diagonal.",
        plot=plot,
        x_label=x_label,
        y_label=y_label,
        x_ticks=x_ticks,
        y_ticks=y_ticks,
        bins=tuple(drawn),
        diagonal=f"M{to_x(0):.1f},{to_y(0):.1f}L{to_x(1):.1f},{to_y(1):.1f}",
    )
