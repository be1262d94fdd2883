"""An owner's export as a streamed HTTP answer, for the API and the dashboard alike.

What the API's GET /users/{id}/export and the dashboard's Export button both send (portability.md).
"""

from __future__ import annotations

from django.http import HttpRequest, StreamingHttpResponse

from deposits.selectors.export import export_bytes

NDJSON = "application/x-ndjson"


def accepts_gzip(request: HttpRequest) -> bool:
    """The client's Accept-Encoding names gzip with a weight above 0."""
    for part in request.headers.get("Accept-Encoding", "").split(","):
        name, _, params = part.strip().partition(";")
        if name.strip().lower() in ("gzip", "x-gzip"):
            weight = params.strip().lower()
            return not weight.startswith("q=") or weight[2:].strip().rstrip("0").rstrip(".") not in ("", "0")
    return False


def export_download(
    request: HttpRequest, user_id: str, *, include_retracted: bool = True
) -> StreamingHttpResponse:
    """The owner's export, streamed as it is read, named `<user_id>.atlaso.jsonl` for a browser.

    Its database connection is held until it ends; gzip when the client takes it.
    """
    gzip = accepts_gzip(request)
    response = StreamingHttpResponse(
        export_bytes(user_id, include_retracted=include_retracted, gzip=gzip), content_type=NDJSON
    )
    if gzip:
        response["Content-Encoding"] = "gzip"
    response["Vary"] = "Accept-Encoding"
    response["Content-Disposition"] = f'attachment; filename="{user_id}.atlaso.jsonl"'
    return response
