"""The forms of the diagnostics pages: the owners search, bag filter, health window and job start.

The filters are a page's query (GET): they never refuse the page. A value that does not clean
counts as absent (its field's `initial`), and the owner page says which facet it set aside.
Their field names are fixed (outside browser tests use them; /work/shared/spec/dashboard.md).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import ProhibitNullCharactersValidator

from deposits.domain.types import FACETS, INT_FACETS
from diagnostics import job_runner, selectors

#: The windows a health trend is read over, and the one shown when none (or another) is asked for.
HEALTH_DAYS = (7, 30, 90)
TREND_DAYS = 30
# A facet number is stored as a bigint: beyond it no bag can match.
FACET_NUMBER_BOUND = 2**63


# ---- Fields ----------------------------------------------------------------------------------


class TextField(forms.CharField):
    """Optional text as sent, trimmed, NUL included.

    The value's own check (an owner id's rule) judges it whole, and the page shows it back as it was
    typed.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, initial="", **kwargs)
        self.validators = [v for v in self.validators if not isinstance(v, ProhibitNullCharactersValidator)]


def _facet_text(value: Any) -> str:
    """A facet as typed, trimmed and less NUL.

    No stored scope holds a NUL, so dropping it changes no meaning.
    """
    return "" if value in (None, "") else str(value).strip().replace("\x00", "")


class FacetText(forms.CharField):
    """A text facet to filter by; empty means any."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, initial=None, **kwargs)

    def to_python(self, value: Any) -> str:
        return _facet_text(value)


class WholeNumberField(forms.Field):
    """A whole number as Python's `int()` reads one (" 7", "+7", "1_000"); empty is None.

    With `bound`, a number of that magnitude or beyond is out of range.
    """

    default_error_messages = {
        "invalid": "must be a whole number; “%(value)s” is not",
        "range": "is out of range",
    }

    def __init__(self, *, bound: int | None = None, **kwargs: Any) -> None:
        super().__init__(required=False, **kwargs)
        self.bound = bound

    def to_python(self, value: Any) -> int | None:
        if value in self.empty_values:
            return None
        try:
            number = int(value)
        except (TypeError, ValueError):
            raise ValidationError(
                self.error_messages["invalid"], code="invalid", params={"value": value}
            ) from None
        if self.bound is not None and abs(number) >= self.bound:
            raise ValidationError(self.error_messages["range"], code="range")
        return number


class FacetNumber(WholeNumberField):
    """A number facet (`n`, `seed`) to filter by, read from the text as a text facet is."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(bound=FACET_NUMBER_BOUND, initial=None, **kwargs)

    def to_python(self, value: Any) -> int | None:
        return super().to_python(_facet_text(value))


# ---- A page's query ------------------------------------------------------------------------


class QueryForm(forms.Form):
    """A GET page's query: every field has a value once read.

    Its `initial` when it was absent, empty or did not clean.
    """

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        for name, field in self.fields.items():
            if cleaned.get(name) in field.empty_values:
                cleaned[name] = field.initial
        return cleaned

    def read(self) -> dict[str, Any]:
        """Every field's value, valid or not (a filter never refuses the page)."""
        self.is_valid()
        return self.cleaned_data


class OwnerSearchForm(QueryForm):
    """`/owners/`: `q`, an owner id prefix (matched exactly), and `sort`, a column (`-`: descending)."""

    q = TextField()
    sort = forms.ChoiceField(
        choices=[(sort, sort) for column in selectors.OWNER_SORTS for sort in (column, f"-{column}")],
        required=False,
        initial=selectors.DEFAULT_OWNER_SORT,
    )


class BagFilterForm(QueryForm):
    """The owner page's bag filter: the six facets (blank means any) and `conflict=1`."""

    conflict = forms.TypedChoiceField(
        choices=[("1", "only conflicts")],
        coerce=lambda value: value == "1",
        empty_value=False,
        required=False,
        initial=False,
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for facet in FACETS:
            self.fields[facet] = FacetNumber() if facet in INT_FACETS else FacetText()

    @property
    def facets(self) -> dict[str, Any]:
        """The facets to filter by: those given that clean."""
        values = self.read()
        return {facet: values[facet] for facet in FACETS if values[facet] not in (None, "")}

    @property
    def typed(self) -> dict[str, str]:
        """Each facet as it was sent, to show it again in its field."""
        return {facet: self.data.get(facet, "") for facet in FACETS}

    @property
    def problems(self) -> list[str]:
        """A sentence for each facet set aside because it did not clean."""
        self.is_valid()
        return [
            f"{facet} {message}, so it was not applied."
            for facet in FACETS
            for message in self.errors.get(facet, ())
        ]


class HealthForm(QueryForm):
    """`/health/`: `days`, one of HEALTH_DAYS, and `owner` (blank: the whole deployment)."""

    days = WholeNumberField(initial=TREND_DAYS)
    owner = TextField()

    def clean_days(self) -> int | None:
        days = self.cleaned_data["days"]
        if days is not None and days not in HEALTH_DAYS:
            raise ValidationError("is not a window the page draws", code="invalid_choice")
        return days


class JobStartForm(forms.Form):
    """Start a job from the jobs page: `name` (from the path), one the page may start."""

    name = forms.ChoiceField(choices=[(name, name) for name in job_runner.DASHBOARD_STARTABLE])
