"""A LangGraph agent whose long-term memory is Atlaso: a graph compiled with `store=AtlasoStore()`.

    pip install "./clients/python[langgraph]"
    export ATLASO_BASE_URL=http://127.0.0.1:8000 ATLASO_API_KEY=atl_…   # what `make run` prints
    python clients/python/examples/langgraph_memory.py

Each turn the graph recalls what the memory holds about the message (the store's `search` with
a query is Atlaso's recall, its flags under `atlaso`), shows it to the model, and runs the
model's `save_memory` calls as `store.put`: a key that already holds a memory is contradicted,
so the old value stays as history, superseded. langchain-core's fake chat model plays the
model here (its replies are scripted); put any chat model that calls tools in its place.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.runtime import Runtime

from atlaso import Memory
from atlaso.integrations.langgraph import AtlasoStore


@dataclass
class Context:
    user_id: str


class State(MessagesState):
    memory: str


def save(key: str, content: str, n: int) -> AIMessage:
    call = {
        "name": "save_memory",
        "args": {"key": key, "content": content},
        "id": f"save_{n}",
        "type": "tool_call",
    }
    return AIMessage(content="", tool_calls=[call])


# What the model says, turn after turn (a real model would decide this from the messages).
SCRIPT: list[BaseMessage] = [
    save("home", "Alice lives in Lyon", 1),
    AIMessage("Noted: you live in Lyon."),
    AIMessage("You live in Lyon, says my memory."),
    save("home", "Alice lives in Paris", 2),
    AIMessage("Noted: you moved to Paris."),
    AIMessage("You live in Paris, says my memory."),
]
model = GenericFakeChatModel(messages=iter(SCRIPT))


def recall(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """What the memory holds about the user's message, with recall's confidence and conflict flags."""
    question = str(state["messages"][-1].content)
    found = runtime.store.search((runtime.context.user_id, "profile"), query=question, limit=5)
    lines = []
    for item in found:
        flags = item.value["atlaso"]
        mark = (
            "conflict" if flags["has_disagreement"] else ("confident" if flags["is_confident"] else "single")
        )
        lines.append(f"- [{mark}] {item.key}: {item.value['content']}")
    return {"memory": "\n".join(lines) or "(nothing yet)"}


def respond(state: State) -> dict[str, Any]:
    shown = SystemMessage(f"What your memory holds about this user:\n{state['memory']}")
    return {"messages": [model.invoke([shown, *state["messages"]])]}


def save_memories(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Run the model's save_memory calls: each a put, which contradicts what the key held."""
    done = []
    for call in state["messages"][-1].tool_calls:
        key, content = call["args"]["key"], call["args"]["content"]
        runtime.store.put((runtime.context.user_id, "profile"), key, {"content": content})
        done.append(ToolMessage(f"saved {key}", tool_call_id=call["id"]))
    return {"messages": done}


def route(state: State) -> str:
    return "save_memories" if state["messages"][-1].tool_calls else END


def build(store: AtlasoStore) -> Any:
    graph = StateGraph(State, context_schema=Context)
    graph.add_node("recall", recall)
    graph.add_node("respond", respond)
    graph.add_node("save_memories", save_memories)
    graph.add_edge(START, "recall")
    graph.add_edge("recall", "respond")
    graph.add_conditional_edges("respond", route, ["save_memories", END])
    graph.add_edge("save_memories", "respond")
    return graph.compile(store=store)


def main(owner: str) -> None:
    memory = Memory()
    app = build(AtlasoStore(memory))
    for said in ("I live in Lyon.", "Where do I live?", "I moved to Paris.", "Where do I live?"):
        state = app.invoke({"messages": [HumanMessage(said)]}, context=Context(user_id=owner))
        print(f"user: {said}")
        print(f"  memory shown: {state['memory'].replace(chr(10), ' ')}")
        print(f"  assistant: {state['messages'][-1].content}")
    history = memory.for_user(owner).recall("Alice lives", include_superseded=True)
    print("history of the key 'home':")
    for hit in sorted(history, key=lambda hit: hit.deposit.created_at):
        print(f"  {'superseded' if hit.superseded else 'live'}: {hit.content}")


if __name__ == "__main__":
    main(os.environ.get("ATLASO_USER", "alice"))
