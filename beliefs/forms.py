"""The forms of the beliefs pages: Confirm, and the provenance page's tier, channel and key forms.

Their field names are fixed (outside browser tests post them); the rules they check are the
domain's, in the dashboard's words.
"""

from __future__ import annotations

from django import forms

from atlaso_site.access.models import PERMISSIONS, Channel, ProvenanceTier
from beliefs.domain.values import CEILING_BOUNDS, MAX_VALUE_LENGTH, is_ceiling

#: What the tier form says of a ceiling it cannot take: missing, not a number, or out of bounds.
CEILING_HINT = f"A ceiling lies strictly between {CEILING_BOUNDS}, e.g. 0.65."


class ConfirmForm(forms.Form):
    """The value a reviewer confirms as true."""

    value = forms.CharField(
        max_length=MAX_VALUE_LENGTH,
        error_messages={"required": "Type the value you confirm as true."},
        widget=forms.TextInput(attrs={"autocomplete": "off"}),
    )


class TierForm(forms.Form):
    """A tier's new ceiling."""

    tier = forms.CharField(max_length=64)
    ceiling = forms.FloatField(error_messages={"required": CEILING_HINT, "invalid": CEILING_HINT})

    def clean_ceiling(self) -> float:
        ceiling = self.cleaned_data["ceiling"]
        if not is_ceiling(ceiling):
            raise forms.ValidationError(CEILING_HINT)
        return ceiling


class ChannelForm(forms.Form):
    """A new channel and the tier it is bound to."""

    name = forms.SlugField(
        max_length=64,
        error_messages={
            "required": "Name the channel, e.g. support-bot.",
            "invalid": "A channel name is letters, digits, _ and -, e.g. support-bot.",
        },
    )
    tier = forms.ModelChoiceField(ProvenanceTier.objects.all(), to_field_name="name")
    description = forms.CharField(max_length=500, required=False)

    def clean_name(self) -> str:
        name = self.cleaned_data["name"]
        if Channel.objects.filter(name=name).exists():
            raise forms.ValidationError(f"There is a channel {name} already; rebind it in the table instead.")
        return name


class RebindForm(forms.Form):
    """A channel and the tier it moves to."""

    channel = forms.ModelChoiceField(Channel.objects.select_related("tier"), to_field_name="name")
    tier = forms.ModelChoiceField(ProvenanceTier.objects.all(), to_field_name="name")


class ApiKeyForm(forms.Form):
    """A new API key: what it is for, the channel it writes on, what it may do, whom it may read."""

    name = forms.CharField(max_length=200, error_messages={"required": "Name the key after what uses it."})
    channel = forms.ModelChoiceField(
        Channel.objects.select_related("tier"),
        to_field_name="name",
        error_messages={"required": "Choose the channel the key writes on."},
    )
    perm = forms.MultipleChoiceField(
        choices=[(permission, permission) for permission in PERMISSIONS],
        error_messages={"required": "Choose at least one permission."},
    )
    user_prefix = forms.CharField(max_length=128, required=False)
