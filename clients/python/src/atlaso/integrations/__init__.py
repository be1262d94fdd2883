"""Atlaso in agent frameworks: `atlaso.integrations.langgraph` (LangGraph's store) and
`atlaso.integrations.langchain` (a retriever and tools). Each is an extra of the package
(`pip install "atlaso[langgraph]"`, `"atlaso[langchain]"`) and imports its framework only when
it is itself imported; this package imports nothing."""
