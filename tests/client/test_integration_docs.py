"""Each integration page (docs/integrations/) opens with a runnable example, run as pasted.

Each is run as a reader would paste it, with the environment `make run` prints, against a
served Atlaso.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.client.served import ROOT, ServedAtlaso

PAGES = sorted((ROOT / "docs" / "integrations").glob("*.md"))


def opening_example(page: Path) -> str:
    text = page.read_text()
    first = re.search(r"```(\w+)\n(.*?)```", text, re.S)
    assert first, f"{page.name} has no example"
    assert text.index(first.group(0)) < text.index("\n## "), f"{page.name} does not open with its example"
    assert first.group(1) == "python", page.name
    return first.group(2)


def test_there_is_a_page_per_integration():
    assert [page.stem for page in PAGES] == ["langchain", "langgraph", "mcp", "openai-agents"]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.stem)
def test_each_page_opens_with_an_example_that_runs(
    page: Path, served: ServedAtlaso, owner: str, tmp_path: Path
):
    script = tmp_path / f"example_{page.stem.replace('-', '_')}.py"  # not a package's name
    script.write_text(opening_example(page))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATLASO_", "OPENAI_"))}
    env |= {"ATLASO_BASE_URL": served.url, "ATLASO_API_KEY": served.keys["client-rw"], "ATLASO_USER": owner}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # where `atlaso` is
    done = subprocess.run([sys.executable, str(script)], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    expected = {
        "langgraph": "Alice switched to green tea",
        "langchain": "Alice prefers the 0.8 threshold",
        "mcp": "Settled: the person says the negative side holds (the prod logs say so)",
        "openai-agents": "1 hit across 1 bag · 0 bags in conflict · not confident",
    }
    assert expected[page.stem] in done.stdout, done.stdout
