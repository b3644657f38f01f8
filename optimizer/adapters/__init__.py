"""Thin layers over `optimizer.runtime` for the frameworks agents already run in.

`openai_sdk` needs only the core install; `langchain` (the middleware and the loader of LangChain exports)
needs the `langchain` extra; `native_export` writes a guideline as Anthropic / OpenAI Responses / LangChain
settings with a per-entry loss report (`native_targets`: one exporter per target).
"""
