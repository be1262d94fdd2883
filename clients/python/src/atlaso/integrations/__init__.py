"""Atlaso in agent frameworks: LangGraph's store, and LangChain's retriever and tools.

`atlaso.integrations.langgraph` and `atlaso.integrations.langchain` are each an extra of the
package (`pip install "atlaso[langgraph]"`, `"atlaso[langchain]"`) and import their framework
only when they are themselves imported; this package imports nothing.
"""
