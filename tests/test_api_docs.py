"""/api/v1/docs: Swagger UI from the package's own static files, so the page works offline."""

from __future__ import annotations

import json
from html.parser import HTMLParser

from django.contrib.staticfiles import finders


class PageAssets(HTMLParser):
    """What a page loads: script sources, stylesheet and icon links, and its Swagger settings."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.swagger_settings = ""
        self._in_settings = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag == "script" and named.get("src"):
            self.urls.append(named["src"] or "")
        if tag == "link" and named.get("href"):
            self.urls.append(named["href"] or "")
        self._in_settings = tag == "script" and named.get("id") == "swagger-settings"

    def handle_data(self, data: str) -> None:
        if self._in_settings:
            self.swagger_settings += data

    def handle_endtag(self, tag: str) -> None:
        self._in_settings = False


def docs_page(client) -> tuple[str, PageAssets]:
    response = client.get("/api/v1/docs")
    assert response.status_code == 200
    html = response.content.decode()
    assets = PageAssets()
    assets.feed(html)
    return html, assets


def test_the_docs_page_names_no_external_host(client):
    html, _ = docs_page(client)
    assert "https://" not in html and "http://" not in html
    assert "cdn" not in html.lower()


def test_every_script_and_stylesheet_of_the_docs_page_is_a_static_file_we_ship(client):
    _, assets = docs_page(client)
    loaded = [url for url in assets.urls if url.endswith((".js", ".css"))]
    assert len(loaded) >= 3  # the Swagger UI stylesheet, its bundle and the script that starts it
    for url in assets.urls:
        assert url.startswith("/static/"), url
        assert finders.find(url.removeprefix("/static/")) is not None, url


def test_the_docs_page_reads_the_schema_from_this_server(client):
    _, assets = docs_page(client)
    schema_url = json.loads(assets.swagger_settings)["url"]
    assert schema_url == "/api/v1/openapi.json"
    assert client.get(schema_url).status_code == 200
