"""An OpenAI Agents SDK agent whose memory is Atlaso, mounted as an MCP server (`atlaso mcp`).

    pip install "./clients/python[mcp]" openai-agents
    export ATLASO_BASE_URL=http://127.0.0.1:8000 ATLASO_API_KEY=atl_…   # what `make run` prints
    python clients/python/examples/openai_agents_mcp.py            # a scripted model plays the model
    OPENAI_API_KEY=sk-… python clients/python/examples/openai_agents_mcp.py --model gpt-5

The agent writes what it learns with the `add` tool and answers from `recall`, whose flags say
whether the memory agrees with itself. Without `--model`, the Agents SDK's own `ScriptedModel`
takes the model's turns (a fixed script: add, recall, then an answer built from what recall
said), so the example runs with no model and no network beyond Atlaso.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from agents import Agent, RunConfig, Runner
from agents.mcp import MCPServerStdio
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

INSTRUCTIONS = (
    "You keep a memory of the user in Atlaso. Store what you learn with add. Before answering from "
    "memory, recall, and say when the memory disagrees with itself instead of picking a side."
)


def atlaso_mcp(owner: str) -> MCPServerStdio:
    """`atlaso mcp` over stdio, as any host starts it, with the owner as its default."""
    env = {**os.environ, "ATLASO_USER": owner}
    return MCPServerStdio(
        params={"command": sys.executable, "args": ["-m", "atlaso", "mcp"], "env": env},
        name="atlaso",
        cache_tools_list=True,
        client_session_timeout_seconds=30,
    )


def last_tool_text(call: ModelCall) -> str:
    """What the last tool answered, as the model reads it (the tool's text)."""
    outputs = [
        item for item in call.input if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    output = outputs[-1]["output"]
    if isinstance(output, str):
        return output
    return "\n".join(part.get("text", "") for part in output if isinstance(part, dict))


def answer_from_recall(call: ModelCall) -> ModelStep:
    """The scripted model's last turn: an answer from recall's verdict, as a careful model gives it.

    Recall's text opens with its verdict, e.g. "2 hits across 1 bag · 1 bag in conflict · not
    confident", then one line per hit.
    """
    verdict, *hits = last_tool_text(call).splitlines()
    if " 0 bags in conflict" not in f" {verdict}":
        said = "My memory disagrees with itself about this, so I will not pick a side"
    else:
        said = "From memory: " + "; ".join(hit.split(": ", 1)[-1] for hit in hits)
    return ModelStep(output=[assistant_message(f"{said} [{verdict}]")])


def scripted_model() -> ScriptedModel:
    """The model's turns for a run with no model: remember, recall, answer from what recall said."""
    return ScriptedModel([
        [function_call("add", {"content": "Alice's team ships on Fridays", "polarity": "positive",
                               "evidence_grade": "observed", "scope": {"model": "team", "dataset": "calendar"}},
                       call_id="call_add")],
        [function_call("recall", {"query": "ships Fridays"}, call_id="call_recall")],
        ModelStep.respond(answer_from_recall),
    ])  # fmt: skip


async def main(owner: str, model_name: str | None) -> str:
    async with atlaso_mcp(owner) as memory:
        tools = [tool.name for tool in await memory.list_tools()]
        print(f"atlaso mcp tools: {', '.join(tools)}")
        agent = Agent(
            name="assistant",
            instructions=INSTRUCTIONS,
            mcp_servers=[memory],
            model=model_name or scripted_model(),
        )
        result = await Runner.run(
            agent,
            "Remember that my team ships on Fridays, then tell me what you know about when we ship.",
            run_config=RunConfig(tracing_disabled=model_name is None),
        )
        for item in result.new_items:
            if item.type == "tool_call_item":
                print(f"tool call: {item.raw_item.name} {item.raw_item.arguments}")
        return str(result.final_output)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--owner", default=os.environ.get("ATLASO_USER", "alice"), help="the memory owner")
    parser.add_argument("--model", help="a real model's name (needs OPENAI_API_KEY); default: scripted")
    args = parser.parse_args()
    print(f"answer: {asyncio.run(main(args.owner, args.model))}")
