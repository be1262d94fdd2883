"""The forms of the deposit pages: Resolve, the queue's filter, Retract and Erase, the recall playground.

They read what was sent and show it again; they judge nothing the services judge. A service's
refusal (`AtlasoError`) is added to its form with `refuse`, on the field it names when the form
has one, so the page shows it beside what the reviewer typed.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.forms.forms import NON_FIELD_ERRORS
from django.utils.http import url_has_allowed_host_and_scheme

from atlaso_site.lib.errors import AtlasoError
from atlaso_site.lib.text import is_blank
from atlaso_site.ui.pages import page_number
from deposits.domain.meaning import MODES
from deposits.domain.recall import MAX_LIMIT
from deposits.domain.types import FACETS, INT_FACETS

QUEUE_PAGE_SIZE = 20
DEFAULT_RECALL_LIMIT = 10
# The longest owner prefix the queue filters by: a user_id is at most 128 characters.
MAX_OWNER_PREFIX = 128


# ---- Fields ----------------------------------------------------------------------------------


class TextField(forms.CharField):
    """Text as sent, less NUL; optional; trimmed only when `strip`.

    PostgreSQL refuses NUL in text and no stored value holds one, so dropping it changes no
    meaning. The form shows the text again as it reads it, so what is shown is what was judged.
    """

    def __init__(self, *, strip: bool = False, required: bool = False, **kwargs: Any) -> None:
        super().__init__(strip=strip, required=required, **kwargs)

    def to_python(self, value: Any) -> str:
        text = "" if value in self.empty_values else str(value).replace("\x00", "")
        if self.strip:
            text = text.strip()
        return text or self.empty_value

    def bound_data(self, data: Any, initial: Any) -> Any:
        return self.to_python(data)

    def prepare_value(self, value: Any) -> Any:
        return "" if value is None else value


class WholeNumberField(TextField):
    """A whole number typed as text, read as Python's `int()` reads it; empty is None."""

    def __init__(self, *, message: str, **kwargs: Any) -> None:
        super().__init__(strip=True, **kwargs)
        self.message = message

    def clean(self, value: Any) -> int | None:
        text = super().clean(value)
        if not text:
            return None
        try:
            return int(text)
        except ValueError:
            raise ValidationError(self.message, code="invalid") from None


class ValuesField(forms.Field):
    """Every value sent under one name (the ticked checkboxes), as sent; none is fine."""

    widget = forms.MultipleHiddenInput

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, **kwargs)

    def to_python(self, value: Any) -> list[str]:
        return [str(item) for item in value or ()]

    def prepare_value(self, value: Any) -> list[str]:
        return self.to_python(value)


class PageField(forms.Field):
    """A list's page number, read by the one page parser: 1 when absent or malformed."""

    widget = forms.HiddenInput

    def __init__(self, *, size: int, **kwargs: Any) -> None:
        super().__init__(required=False, **kwargs)
        self.size = size

    def to_python(self, value: Any) -> int:
        return page_number({} if value is None else {"page": value}, size=self.size)


# ---- Refusals --------------------------------------------------------------------------------


class RefusableForm(forms.Form):
    """A form a service may refuse: the refusal is its error, on the field it names."""

    #: Where a refusal naming no field of this form is shown (None: above the form).
    refusal_field: str | None = None

    #: The code of the service's refusal, once refused.
    refusal_code: str | None = None

    def refuse(self, error: AtlasoError) -> None:
        self.refusal_code = error.code
        named = str(error.details.get("field", "")).removeprefix("scope.")
        self.add_error(named if named in self.fields else self.refusal_field, error.message)

    @property
    def error_field(self) -> str | None:
        """The field the error is on, if any: the one the page marks invalid."""
        return next((name for name in self.errors if name != NON_FIELD_ERRORS), None)

    @property
    def error_message(self) -> str | None:
        """The first error, as the page says it."""
        return next((messages[0] for messages in self.errors.values()), None)


# ---- Resolve and the conflict queue ----------------------------------------------------------


class ResolveForm(RefusableForm):
    """Resolve a bag: the deposits that hold, why, and optionally the claim in the reviewer's words.

    The live deposits that hold (`keep`), why (`reason`) and the claim that holds (`holds`); the
    service judges them all.
    """

    keep = ValuesField()
    reason = TextField()
    holds = TextField()
    # The "… holds" button pressed, if one was: keep every live deposit of that side.
    side = TextField(strip=True)

    @property
    def kept(self) -> frozenset[str]:
        """The ticked deposit ids, to tick them again."""
        return frozenset(self["keep"].value())


class QueueFilter(forms.Form):
    """The conflict queue's query: an owner id prefix (`owner`) and a page."""

    owner = TextField(strip=True)
    page = PageField(size=QUEUE_PAGE_SIZE)

    def clean_owner(self) -> str:
        return self.cleaned_data["owner"][:MAX_OWNER_PREFIX]

    def queue(self) -> tuple[str, int]:
        """(owner prefix, page number) as read: nothing in them is an error."""
        self.is_valid()
        return self.cleaned_data["owner"], self.cleaned_data["page"]


class QueueResolveForm(ResolveForm, QueueFilter):
    """Resolve from the queue: the Resolve form, and the queue it came from (hidden `owner` and `page`)."""


# ---- The review desk -------------------------------------------------------------------------


class DeskFilter(forms.Form):
    """The desk's query: an owner id prefix (`owner`), as the queue's."""

    owner = TextField(strip=True)

    def clean_owner(self) -> str:
        return self.cleaned_data["owner"][:MAX_OWNER_PREFIX]

    def owner_prefix(self) -> str:
        self.is_valid()
        return self.cleaned_data["owner"]


class DeskResolveForm(ResolveForm, DeskFilter):
    """Resolve on the desk: ticks or a "… holds" button, the reason, and the desk's filter."""


class SkipForm(RefusableForm, DeskFilter):
    """Skip on the desk: an optional note for oneself."""

    note = TextField(strip=True, max_length=2000)
    refusal_field = "note"


class NextForm(forms.Form):
    """Where an action on a conflict goes back to (Undo, Take over): a path on this site."""

    next = TextField(strip=True)

    def target(self, request: Any, default: str) -> str:
        self.is_valid()
        wanted = self.cleaned_data.get("next") or ""
        safe = url_has_allowed_host_and_scheme(
            wanted, allowed_hosts={request.get_host()}, require_https=False
        )
        return wanted if wanted.startswith("/") and safe else default


class ResolvedFilter(forms.Form):
    """The resolved list's query: only mine (`mine=1`), an owner id prefix, a page."""

    mine = TextField(strip=True)
    owner = TextField(strip=True)
    page = PageField(size=QUEUE_PAGE_SIZE)

    def clean_owner(self) -> str:
        return self.cleaned_data["owner"][:MAX_OWNER_PREFIX]

    def query(self) -> tuple[bool, str, int]:
        if not self.is_valid():
            return False, "", 1
        data = self.cleaned_data
        return data["mine"] == "1", data["owner"], data["page"]


# ---- Retract and Erase -----------------------------------------------------------------------


class ReasonForm(forms.Form):
    """Why a deposit is retracted or erased: required, as the audit keeps it."""

    reason = TextField()

    #: What the page says when no reason is given.
    missing = "Say why."

    def clean_reason(self) -> str:
        reason = self.cleaned_data["reason"].strip()
        if is_blank(reason):
            raise ValidationError(self.missing, code="required")
        return reason


class RetractForm(ReasonForm):
    missing = "Say why this deposit is retracted."


class EraseForm(ReasonForm):
    missing = "Say why this deposit is erased."


# ---- The recall playground -------------------------------------------------------------------


class RecallForm(RefusableForm):
    """The playground's query (`q`, `limit`, `mode` and the six facets) as typed, and an error per field."""

    refusal_field = "q"

    q = TextField()
    # Empty: the server's choice, as an agent that sends no mode gets.
    mode = TextField(strip=True)
    limit = WholeNumberField(
        message=f"limit must be a whole number from 1 to {MAX_LIMIT}", empty_value=str(DEFAULT_RECALL_LIMIT)
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in FACETS:
            message = f"{name} must be a whole number, or left empty"
            self.fields[name] = (
                WholeNumberField(message=message) if name in INT_FACETS else TextField(strip=True)
            )

    def clean_mode(self) -> str | None:
        mode = self.cleaned_data.get("mode") or None
        if mode is not None and mode not in MODES:
            raise ValidationError(
                f"mode must be one of {', '.join(MODES)}, or the server's choice", code="invalid"
            )
        return mode

    @property
    def modes(self) -> tuple[str, ...]:
        return MODES

    @property
    def facets(self) -> dict[str, Any]:
        """The facets given, parsed: what recall filters by (valid forms only)."""
        given = {name: self.cleaned_data.get(name) for name in FACETS}
        return {name: value for name, value in given.items() if value not in (None, "")}

    @property
    def typed(self) -> dict[str, str]:
        """Every field as the form reads it (trimmed, defaults filled in), valid or not."""
        return {name: self[name].value() for name in self.fields}

    @property
    def facet_fields(self) -> list[dict[str, Any]]:
        return [
            {
                "name": name,
                "value": self[name].value(),
                "numeric": name in INT_FACETS,
                "error": (self.errors.get(name) or [None])[0],
            }
            for name in FACETS
        ]

    @property
    def scoped(self) -> bool:
        return any(self[name].value() for name in FACETS)
