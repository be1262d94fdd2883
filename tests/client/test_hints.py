"""Every `manage.py` command the client, the CLI, the MCP server and the READMEs tell a person.

Each is typed as written in a shell beside `make run`'s state: the checkout's .venv, a var/
holding the secret key the Makefile made and a migrated database, and no secret key in the
environment.
"""

from __future__ import annotations

import asyncio
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from atlaso import AsyncMemory, AuthenticationError, Memory
from atlaso.cli import main as atlaso_cli
from atlaso.mcp_server import build_server
from tests.client.served import ROOT, free_port

# make run's state is SQLite under var/ whatever the suite's database: one pass is enough.
pytestmark = pytest.mark.once

VENV_PYTHON = ROOT / ".venv" / "bin" / "python"
# Where a command is meant to be typed: the checkout `make run` runs in.
CHECKOUT = ROOT
# A password for the interactive create_login, typed twice at its prompts.
PASSWORD = "a-long-enough-password\n"


def hint_commands(text: str) -> list[str]:
    """The `manage.py` commands `text` offers, as written: inline code and lines of sh blocks."""
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        commands += [line.split("  #")[0].strip() for line in block.splitlines() if "manage.py" in line]
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    # A span naming the file alone (`manage.py`) is not a command; one with a subcommand is.
    commands += [" ".join(m.split()) for m in re.findall(r"`([^`]*manage\.py [^`]*)`", prose)]
    return commands


def readme_commands(path: Path) -> list[str]:
    text = path.read_text()
    # "Scaling out" speaks to a PostgreSQL deployment (its commands rebuild PostgreSQL's own
    # structures), not to the SQLite `make run` keeps in var/.
    if "\n## Scaling out" in text:
        before, rest = text.split("\n## Scaling out", 1)
        text = before + ("\n## " + rest.split("\n## ", 1)[1] if "\n## " in rest else "")
    return hint_commands(text)


@pytest.fixture(scope="module")
def make_run_state(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a shell beside `make run`: a var/ as the Makefile leaves it.

    Its secret key, a migrated SQLite database, and none of the settings the suite sets for itself.
    """
    assert VENV_PYTHON.exists(), f"{VENV_PYTHON} is missing: `make setup` makes it"
    var = tmp_path_factory.mktemp("make-run") / "var"
    var.mkdir()
    key = var / "secret-key"
    key.write_text(os.urandom(36).hex())
    key.chmod(0o600)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SECRET_KEY", "DEBUG", "DATABASE_", "REDIS_", "CELERY_", "ATLASO_"))
    }
    # The one setting that moves make run's var/ away from the checkout's own (the Makefile and
    # the settings honour it alike), so the test leaves the checkout's var/ alone.
    env["ATLASO_VAR_DIR"] = str(var)
    done = subprocess.run(
        [str(VENV_PYTHON), "manage.py", "migrate", "--no-input", "-v", "0"],
        cwd=CHECKOUT, env={**env, "SECRET_KEY_FILE": str(key)}, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return env


def typed(command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`command` typed into bash in the checkout, with nothing to answer a prompt but PASSWORD."""
    return subprocess.run(
        ["bash", "-c", f"set -euo pipefail\n{command}"],
        cwd=CHECKOUT, env=env, input=PASSWORD * 2, capture_output=True, text=True, timeout=120,
        start_new_session=True,  # no terminal: getpass reads the password from stdin
    )  # fmt: skip


def client_hints(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """What the client, the CLI and the MCP server say when there is no API key."""
    monkeypatch.delenv("ATLASO_API_KEY", raising=False)
    monkeypatch.setenv("ATLASO_BASE_URL", f"http://127.0.0.1:{free_port()}")
    said: dict[str, str] = {}
    with pytest.raises(AuthenticationError) as raised, Memory() as memory:
        memory.for_user("alice").recall("tea")
    said["the client's AuthenticationError"] = str(raised.value)
    err = io.StringIO()
    assert atlaso_cli(["doctor"], out=io.StringIO(), err=err) == 1
    said["atlaso doctor"] = err.getvalue()

    async def mcp_answer() -> str:
        async with AsyncMemory() as memory, Client(build_server(memory)) as client:
            result = await client.call_tool("peek", {"user_id": "alice"})
            assert result.is_error
            return result.content[0].text

    said["an MCP tool without a key"] = asyncio.run(mcp_answer())
    return said


def test_every_key_hint_the_client_cli_and_mcp_server_give_works_as_typed(
    make_run_state: dict[str, str], monkeypatch: pytest.MonkeyPatch
):
    said = client_hints(monkeypatch)
    for where, text in said.items():
        commands = hint_commands(text)
        assert commands, f"{where} names no command: {text}"
        for command in commands:
            done = typed(command, make_run_state)
            assert done.returncode == 0, f"{where}: `{command}` failed:\n{done.stderr[-3000:]}"
            assert re.fullmatch(r"atl_\S+", done.stdout.strip().splitlines()[-1]), done.stdout
            assert "Keep the secret now" in done.stderr


@pytest.mark.parametrize("readme", ["README.md", "clients/python/README.md"])
def test_every_manage_py_command_a_readme_gives_works_as_typed(make_run_state: dict[str, str], readme: str):
    commands = readme_commands(ROOT / readme)
    assert any("create_api_key" in c for c in commands), commands
    for command in commands:
        done = typed(command + '\necho "exit=$?"', make_run_state)
        assert done.returncode == 0 and done.stdout.endswith("exit=0\n"), (
            f"`{command}` failed:\n{done.stdout[-1000:]}\n{done.stderr[-3000:]}"
        )
        assert "Traceback" not in done.stderr, done.stderr


def test_without_a_secret_key_anywhere_manage_py_says_so_in_one_line(
    make_run_state: dict[str, str], tmp_path: Path
):
    env = {**make_run_state, "ATLASO_VAR_DIR": str(tmp_path / "empty-var")}
    done = typed(".venv/bin/python manage.py create_api_key --name x --channel x", env)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "manage.py: SECRET_KEY is required when DEBUG is off; set SECRET_KEY, or SECRET_KEY_FILE to a "
        "file holding it (make run writes one to var/secret-key), or DEBUG=true for local use"
    ]


def test_the_mcp_sdk_hint_installs_the_extras_requirement_into_the_python_running_atlaso(
    monkeypatch: pytest.MonkeyPatch,
):
    # As where the extra is missing: importing the MCP server fails on `mcp`.
    for name in [n for n in sys.modules if n == "mcp" or n.startswith("mcp.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "atlaso.mcp_server", raising=False)
    err = io.StringIO()
    assert atlaso_cli(["mcp"], out=io.StringIO(), err=err) == 1
    said, command = err.getvalue().rstrip("\n").split(": ", 1)
    assert said == 'atlaso mcp needs the MCP SDK (what pip install "atlaso[mcp]" adds)'
    assert command == f"{sys.executable} -m pip install 'mcp<3,>=2.3'"
    # Here the requirement is met, so pip answers from what is installed, without the network.
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Requirement already satisfied: mcp<3,>=2.3" in done.stdout, done.stderr
