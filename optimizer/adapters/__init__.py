"""Thin layers over `optimizer.runtime` for the frameworks agents already run in.

`openai_sdk` needs only the core install; `langchain_middleware` needs the `langchain` extra;
`native_export` writes a guideline as Anthropic / LangChain settings with a per-entry loss report.
"""
