"""The README's shell examples, run as a reader would paste them, against a served Atlaso.

Atlaso is served as `make run` serves it: only the address and the tools' paths are put in for
this machine.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx

from tests.client.served import ROOT, ServedAtlaso

SECTION = "## The API at a glance"


def readme_examples() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def test_the_readme_has_the_examples_this_test_runs():
    blocks = readme_examples()
    assert len(blocks) >= 4
    assert "<" not in "".join(blocks).replace("<<", ""), "a placeholder a reader would have to fill in"


def test_every_shell_example_runs_verbatim_against_a_served_atlaso(served: ServedAtlaso, tmp_path: Path):
    script = "set -euo pipefail\n" + "\n".join(readme_examples())
    script = script.replace("http://127.0.0.1:8000", served.url)
    script = script.replace(".venv/bin/python manage.py", f"{sys.executable} {ROOT / 'manage.py'}")
    script += '\necho "KEY=$KEY"\necho "DEPOSIT=$DEPOSIT"\n'
    done = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=served.env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    out = done.stdout
    key = re.search(r"^KEY=(\S+)$", out, re.M).group(1)
    deposit = re.search(r"^DEPOSIT=(\S+)$", out, re.M).group(1)
    answers = [json.loads(line) for line in re.findall(r"^\{.*\}$", out, re.M)]
    assert [a["kind"] for a in answers] == ["add_result", "add_result", "search_results"], out
    # The correction superseded the deposit the first example wrote; recall answers with it.
    headers = {"Authorization": f"Bearer {key}"}
    first = httpx.get(f"{served.url}/api/v1/users/alice/deposits/{deposit}", headers=headers).json()
    assert first["superseded_by"], first
    hits = answers[2]["items"]
    assert hits and hits[0]["deposit"]["content"] == "Threshold 0.8 is right for production"
