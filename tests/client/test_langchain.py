"""LangChain over a served Atlaso: `AtlasoRetriever` and `atlaso_tools` against `langchain-core`.

They run inside runnable chains driven by langchain-core's own fake chat model (it answers
scripted messages, tool calls included; no network, no model).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.tools import BaseTool

from atlaso import AsyncMemory, Memory
from atlaso.integrations.langchain import AtlasoRetriever, atlaso_tools
from atlaso.mcp_server import build_server
from tests.client.served import ServedAtlaso

PROD = {"model": "gpt-5", "dataset": "evals", "env": "prod"}


class RecordingFakeChatModel(GenericFakeChatModel):
    """langchain-core's fake chat model, keeping what it was shown each turn."""

    seen: list[list[BaseMessage]] = []

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        self.seen.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


def fake_model(*replies: AIMessage | str) -> RecordingFakeChatModel:
    return RecordingFakeChatModel(messages=iter(replies), seen=[])


@pytest.fixture
def memory(served: ServedAtlaso) -> Any:
    with Memory(api_key=served.keys["client-rw"], base_url=served.url) as m:
        yield m


def seed(memory: Memory, owner: str) -> None:
    user = memory.for_user(owner)
    user.add("threshold 0.7 is optimal", polarity="positive", evidence_grade="observed", scope=PROD)
    user.add("threshold 0.7 over-flags", polarity="negative", evidence_grade="observed", scope=PROD)
    for n in range(2):
        user.add(f"threshold 0.9 misses fraud (run {n})", polarity="negative", evidence_grade="observed",
                 scope={**PROD, "version": "2"})  # fmt: skip


def test_the_retriever_answers_documents_with_the_hits_flags_and_the_whole_recalls(
    memory: Memory, owner: str
):
    seed(memory, owner)
    docs = AtlasoRetriever(memory.for_user(owner)).invoke("threshold")
    assert len(docs) == 4 and all(isinstance(d, Document) for d in docs)
    by_content = {d.page_content: d.metadata for d in docs}
    conflict = by_content["threshold 0.7 over-flags"]
    assert (conflict["has_disagreement"], conflict["is_confident"], conflict["polarity"]) == (
        True,
        False,
        "negative",
    )
    assert conflict["scope"] == PROD and conflict["conflict_peers"] and conflict["bag_id"].startswith("bag_")
    agreed = by_content["threshold 0.9 misses fraud (run 0)"]
    assert (agreed["has_disagreement"], agreed["is_confident"]) == (False, True)
    assert docs[0].id == docs[0].metadata["id"]
    # k=1 keeps one hit; the recall's own flags still say a matching bag disagrees.
    (only,) = AtlasoRetriever(memory.for_user(owner), k=1).invoke("fraud")
    assert only.metadata["recall"]["explain"].startswith("1 hit across")
    everything = AtlasoRetriever(memory.for_user(owner), k=1).invoke("threshold")[0].metadata["recall"]
    assert everything["has_disagreement"] is True and "1 bag in conflict" in everything["explain"]


def test_the_retriever_in_a_chain_puts_the_memory_and_its_flags_before_the_model(memory: Memory, owner: str):
    seed(memory, owner)
    model = fake_model("The memory disagrees about 0.7: one claim says optimal, one says it over-flags.")

    def context(docs: list[Document]) -> str:
        return "\n".join(
            f"- [{'conflict' if d.metadata['has_disagreement'] else 'ok'}] {d.page_content}" for d in docs
        )

    prompt = ChatPromptTemplate.from_messages([("system", "Memory:\n{context}"), ("human", "{question}")])
    chain = (
        {"context": AtlasoRetriever(memory.for_user(owner), k=2) | RunnableLambda(context),
         "question": RunnablePassthrough()}
        | prompt
        | model
    )  # fmt: skip
    answer = chain.invoke("threshold 0.7")
    assert answer.content.startswith("The memory disagrees about 0.7")
    shown = model.seen[0][0].content
    assert (
        "- [conflict] threshold 0.7 is optimal" in shown and "- [conflict] threshold 0.7 over-flags" in shown
    )


def test_the_retriever_with_an_async_handle_in_an_async_chain(
    served: ServedAtlaso, memory: Memory, owner: str
):
    seed(memory, owner)

    async def main() -> list[Document]:
        async with AsyncMemory(api_key=served.keys["client-rw"], base_url=served.url) as m:
            return await AtlasoRetriever(m.for_user(owner), k=3).ainvoke("fraud")

    docs = asyncio.run(main())
    assert [d.page_content for d in docs] == [
        "threshold 0.9 misses fraud (run 1)",
        "threshold 0.9 misses fraud (run 0)",
    ]


def run_tools(model: RecordingFakeChatModel, tools: list[BaseTool], question: str) -> list[BaseMessage]:
    """A runnable that answers the model's tool calls with the tools until it answers in words."""
    by_name = {tool.name: tool for tool in tools}

    def loop(messages: list[BaseMessage]) -> list[BaseMessage]:
        while True:
            reply = model.invoke(messages)
            messages = [*messages, reply]
            if not reply.tool_calls:
                return messages
            messages += [by_name[call["name"]].invoke(call) for call in reply.tool_calls]

    return RunnableLambda(loop).invoke([HumanMessage(question)])


def call(name: str, args: dict[str, Any], n: int) -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": name, "args": args, "id": f"call_{n}", "type": "tool_call"}]
    )


def test_the_tools_remember_recall_and_list_conflicts_for_the_handles_owner_only(memory: Memory, owner: str):
    seed(memory, owner)
    model = fake_model(
        call("remember", {"content": "Alice prefers the 0.8 threshold", "tags": ["threshold"]}, 1),
        call("recall", {"query": "threshold", "limit": 2}, 2),
        call("conflicts", {}, 3),
        "Noted. The memory still disagrees about 0.7; a person should settle it.",
    )
    messages = run_tools(model, atlaso_tools(memory.for_user(owner)), "What threshold should we use?")
    remembered, recalled, listed = [m for m in messages if isinstance(m, ToolMessage)]
    assert remembered.content.startswith("Stored: ") and remembered.artifact["kind"] == "add_result"
    assert remembered.artifact["deposit"]["user_id"] == owner
    assert recalled.content.splitlines()[0] == recalled.artifact["explain"]
    assert "1 bag in conflict" in recalled.artifact["explain"]
    assert all("deposit" not in hit for hit in recalled.artifact["items"])  # each hit written once
    assert listed.artifact["total"] == 1 and listed.artifact["items"][0]["resolve_url"].endswith("/")
    assert "threshold 0.7 over-flags" in listed.content
    assert messages[-1].content.startswith("Noted.")
    # The model read each tool's answer before its next turn.
    assert isinstance(model.seen[-1][-1], ToolMessage) and model.seen[-1][-1].tool_call_id == "call_3"
    assert [hit.content for hit in memory.for_user(owner).recall("Alice prefers")] == [
        "Alice prefers the 0.8 threshold"
    ]


def test_a_refused_tool_call_answers_the_model_what_would_pass(memory: Memory, owner: str):
    model = fake_model(
        call("remember", {"content": "every threshold works", "polarity": "positive"}, 1),
        call("recall", {"query": "threshold", "limt": 3}, 2),
        "I could not store that.",
    )
    messages = run_tools(model, atlaso_tools(memory.for_user(owner)), "remember this")
    gate, unknown = [m for m in messages if isinstance(m, ToolMessage)]
    assert gate.status == "error"
    assert (
        "The write gate refused this claim: positive/broad claim requires evidence_grade>=replicated"
        in gate.content
    )
    assert "Nothing was stored" in gate.content
    assert unknown.status == "error" and "limt: Extra inputs are not permitted" in unknown.content
    assert memory.for_user(owner).list_recent().total == 0


def test_the_tools_say_what_the_mcp_tools_say_and_run_async(served: ServedAtlaso, owner: str):
    async def main() -> Any:
        async with AsyncMemory(api_key=served.keys["client-rw"], base_url=served.url) as m:
            tools = {tool.name: tool for tool in atlaso_tools(m.for_user(owner))}
            mcp_tools = {t.name: t for t in await build_server(m).list_tools()}
            stored = await tools["remember"].ainvoke(
                {"name": "remember", "args": {"content": "likes tea"}, "id": "c1", "type": "tool_call"}
            )
            return tools, mcp_tools, stored

    tools, mcp_tools, stored = asyncio.run(main())
    assert tools["remember"].description == mcp_tools["add"].description
    assert tools["recall"].description == mcp_tools["recall"].description
    assert tools["conflicts"].description == mcp_tools["conflicts"].description
    assert "user_id" not in tools["recall"].args  # bound to the handle's owner
    assert stored.artifact["deposit"]["user_id"] == owner
