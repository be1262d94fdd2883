"""The deposit page: one deposit with its provenance and edges; Retract, and Erase for operators."""

from __future__ import annotations

import logging

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from atlaso_site.access.roles import OPERATOR, require_role, reviewer_required
from atlaso_site.ui.pages import flash, owner_view
from deposits.domain.bags import bag_id as bag_id_of
from deposits.forms import EraseForm, ReasonForm, RetractForm
from deposits.selectors.deposits import deposit_detail, edges_touching
from deposits.services.deposits import deposit_retract
from deposits.views.shared import deposit_rows, form_status

logger = logging.getLogger(__name__)


def _deposit(
    request: HttpRequest, user_id: str, deposit_id: str, failed: ReasonForm | None = None
) -> HttpResponse:
    """The deposit page; `failed` a Retract or Erase sent without a reason, to show with its error."""
    record = deposit_detail(user_id, deposit_id)
    edges = edges_touching(user_id=user_id, deposit_ids=[record.id])
    (row,) = deposit_rows([record], edges=edges)
    context = {
        "row": row,
        "deposit": record,
        "bag_id": bag_id_of(user_id, record.scope),
        "retract_form": failed if isinstance(failed, RetractForm) else RetractForm(),
        "erase_form": failed if isinstance(failed, EraseForm) else EraseForm(),
    }
    return render(request, "deposits/deposit.html", context, status=form_status(request, failed is not None))


@reviewer_required
@require_GET
@owner_view
def deposit(request: HttpRequest, user_id: str, deposit_id: str) -> HttpResponse:
    """The deposit page."""
    return _deposit(request, user_id, deposit_id)


@reviewer_required
@require_POST
@owner_view
def deposit_retract_view(request: HttpRequest, user_id: str, deposit_id: str) -> HttpResponse:
    """Soft-retract: kept for audit, no longer counted; back to the deposit page."""
    form = RetractForm(request.POST)
    if not form.is_valid():
        deposit_detail(user_id, deposit_id)  # an unknown deposit is a 404 before a form error
        return _deposit(request, user_id, deposit_id, form)
    reason = form.cleaned_data["reason"]
    result = deposit_retract(user_id=user_id, deposit_id=deposit_id, mode="soft", reason=reason)
    flash(request, f"Retracted deposit {result.deposit_id}: it no longer counts in its bag or recall.")
    return redirect("deposits:deposit", user_id=user_id, deposit_id=result.deposit_id)


@reviewer_required
@require_POST
@owner_view
def deposit_erase_view(request: HttpRequest, user_id: str, deposit_id: str) -> HttpResponse:
    """Hard erase (operators only): the row, its index entry and edges go; to the owner page."""
    require_role(request, OPERATOR)
    form = EraseForm(request.POST)
    if not form.is_valid():
        deposit_detail(user_id, deposit_id)
        return _deposit(request, user_id, deposit_id, form)
    reason = form.cleaned_data["reason"]
    deposit_retract(user_id=user_id, deposit_id=deposit_id, mode="hard", reason=reason)
    # The row is gone, and with it any place to keep the reason: the log is the record of who and why.
    logger.info("deposit %s of %s erased by %s: %r", deposit_id, user_id, request.user.get_username(), reason)
    flash(request, f"Erased deposit {deposit_id} of {user_id}: it and its edges are gone.")
    return redirect("diagnostics:owner", user_id=user_id)


__all__ = ["deposit", "deposit_erase_view", "deposit_retract_view"]
