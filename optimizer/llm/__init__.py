"""OpenAI-compatible chat client, usage accounting and the embedded local model server."""

from optimizer.llm.client import ChatClient, Completion
from optimizer.llm.endpoint import EndpointConfig
from optimizer.llm.usage import Pricing, Usage

__all__ = ["ChatClient", "Completion", "EndpointConfig", "Pricing", "Usage"]
