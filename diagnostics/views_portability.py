"""An owner's memory from the dashboard: Export downloads it whole, Forget deletes it whole.

Export is for reviewers and operators. Forget this owner is for operators, after a page that names
the owner and what goes and asks for its id typed again (portability.md).
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.views.decorators.http import require_GET, require_http_methods

from atlaso_site.access.roles import operator_required, reviewer_required
from atlaso_site.ui import pages
from deposits.downloads import export_download
from deposits.selectors.deposits import owner_exists
from diagnostics.forget import forget_preview, owner_forget


@require_GET
@reviewer_required
@pages.owner_view
def owner_export(request: HttpRequest, user_id: str) -> HttpResponse:
    """The owner's atlaso-export file, streamed to the browser."""
    if not owner_exists(user_id):
        return pages.not_found(request, pages.NO_OWNER)
    return export_download(request, user_id)


@require_http_methods(["GET", "POST"])
@operator_required
@pages.owner_view
def owner_forget_page(request: HttpRequest, user_id: str) -> HttpResponse:
    """Forgetting's page: GET shows what would go, POST forgets when the id typed is the owner's.

    The page lists what forgetting would remove beside a form asking for the id typed again; a
    POST with another id shows the page again, saying so.
    """
    preview = forget_preview(user_id=user_id)
    if not preview.holds_anything and not owner_exists(user_id):
        return pages.not_found(request, pages.NO_OWNER)
    typed = request.POST.get("confirm", "") if request.method == "POST" else ""
    problem = None
    if request.method == "POST":
        if typed.strip() == user_id:
            result = owner_forget(user_id=user_id)
            keys = result.keys_tombstoned
            message = (
                f"Forgot {user_id}: {_counted(result.deposits, 'deposit')}, {_counted(result.edges, 'edge')}, "
                f"{_counted(result.observations, 'observation')} and {_counted(result.beliefs, 'belief')} "
                "deleted, with its bags, snapshots, logged recalls and everything else derived from them."
            )
            if keys:
                message += (
                    f" {_counted(keys, 'idempotency key')} now answer{pluralize(keys, 's,')} 410 erased "
                    "for the rest of their 24 hours."
                )
            pages.flash(request, message)
            return redirect("diagnostics:owners")
        problem = "The id typed is not this owner's: nothing was forgotten. Type it exactly as shown."
    context = {"user_id": user_id, "preview": preview, "typed": typed, "problem": problem}
    return render(request, "diagnostics/forget.html", context, status=422 if problem else 200)


def _counted(count: int, noun: str) -> str:
    return f"{count:,} {noun}{pluralize(count)}"
