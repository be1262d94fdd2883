"""The integrations' runnable examples (clients/python/examples/), each run as a reader runs it.

Each is a subprocess with the environment `make run` prints, against a served Atlaso; where a
model would answer, each example's own fake model does.
"""

from __future__ import annotations

import os
import subprocess
import sys

from atlaso import Memory
from tests.client.served import ROOT, ServedAtlaso

EXAMPLES = ROOT / "clients" / "python" / "examples"


def run(example: str, served: ServedAtlaso, owner: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATLASO_", "OPENAI_"))}
    env |= {"ATLASO_BASE_URL": served.url, "ATLASO_API_KEY": served.keys["client-rw"], "ATLASO_USER": owner}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / example)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_langgraph_example_remembers_corrects_and_keeps_the_history(served: ServedAtlaso, owner: str):
    out = run("langgraph_memory.py", served, owner)
    assert out.splitlines() == [
        "user: I live in Lyon.",
        "  memory shown: (nothing yet)",
        "  assistant: Noted: you live in Lyon.",
        "user: Where do I live?",
        "  memory shown: - [single] home: Alice lives in Lyon",
        "  assistant: You live in Lyon, says my memory.",
        "user: I moved to Paris.",
        "  memory shown: (nothing yet)",
        "  assistant: Noted: you moved to Paris.",
        "user: Where do I live?",
        "  memory shown: - [single] home: Alice lives in Paris",
        "  assistant: You live in Paris, says my memory.",
        "history of the key 'home':",
        "  superseded: Alice lives in Lyon",
        "  live: Alice lives in Paris",
    ]


def test_the_openai_agents_example_mounts_atlaso_mcp_and_answers_from_recall(
    served: ServedAtlaso, owner: str
):
    out = run("openai_agents_mcp.py", served, owner).splitlines()
    assert out[0] == (
        "atlaso mcp tools: add, recall, get, list_recent, contradict, retract, health, peek, add_many, "
        "conflicts, settle"
    )
    assert out[1].startswith('tool call: add {"content":"Alice\'s team ships on Fridays"')
    assert out[2] == 'tool call: recall {"query":"ships Fridays"}'
    assert out[3] == (
        "answer: From memory: Alice's team ships on Fridays "
        "[1 hit across 1 bag · 0 bags in conflict · not confident]"
    )
    with Memory(api_key=served.keys["client-rw"], base_url=served.url) as memory:
        (stored,) = memory.for_user(owner).list_recent()
    assert (stored.content, stored.channel) == ("Alice's team ships on Fridays", "client-rw")
