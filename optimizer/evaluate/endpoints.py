"""Resolve the configured endpoints to live clients, starting the embedded server when needed."""

from __future__ import annotations

from collections.abc import Callable

from optimizer.context.compressor import Compressor
from optimizer.llm.cache import ResponseCache
from optimizer.llm.client import ChatClient
from optimizer.llm.endpoint import EndpointConfig
from optimizer.llm.gate import Gate
from optimizer.llm.local import LocalServers, acon_home


class ModelEndpoints:
    """Clients for the agent, compressor and optimizer roles, valid inside a `with` block."""

    def __init__(
        self,
        configs: dict[str, EndpointConfig],
        log: Callable[[str], None] = print,
        *,
        gate_for: Callable[[str, EndpointConfig], Gate] | None = None,
    ) -> None:
        self._configs = configs
        # (base URL, config) -> the gate its requests go through; None: one gate per client, in this process.
        self._gate_for = gate_for
        self._servers = LocalServers(log=log)
        self._clients: dict[str, ChatClient] = {}
        self._cache: ResponseCache | None = None

    def client(self, role: str) -> ChatClient:
        if role not in self._clients:
            config = self._configs[role]
            base_url = self._servers.base_url(config.model) if config.is_local else config.base_url
            gate = self._gate_for(base_url, config) if self._gate_for is not None else None
            client = ChatClient(config, base_url=base_url, model=config.model, gate=gate)
            client.probe()  # an unreachable endpoint fails here, in one line, before any episode runs
            self._clients[role] = client
        return self._clients[role]

    @property
    def configs(self) -> dict[str, EndpointConfig]:
        return dict(self._configs)

    def connect(self) -> ModelEndpoints:
        """Start or reach every configured role now, so a dead endpoint fails before any work starts."""
        for role in self._configs:
            self.client(role)
        return self

    def response_cache(self) -> ResponseCache:
        if self._cache is None:
            self._cache = ResponseCache(acon_home() / "cache" / "replies.sqlite")
        return self._cache

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
        self._servers.close()

    def compressors(self, samples: int = 1) -> list[Compressor]:
        """The compressor role as `samples` draws, one per sampling seed 1..N, on the same server and reply cache
        (a seed is part of a reply's key); one draw is the role as configured."""
        cache = self.response_cache()
        if samples == 1:
            return [Compressor(self.client("compressor"), cache)]
        config = self._configs["compressor"]
        seeded = (self.reconfigured("compressor", config.model_copy(update={"seed": s})) for s in range(1, samples + 1))
        return [Compressor(view.client("compressor"), cache) for view in seeded]

    def reconfigured(self, role: str, config: EndpointConfig) -> ModelEndpoints:
        """These endpoints with `role` sending `config` (a sampling seed, a temperature): the same servers,
        gates and reply cache, so tier-1 repeats share one warm server instead of starting one each."""
        return _Reconfigured(self, role, config)

    def __enter__(self) -> ModelEndpoints:
        try:
            return self.connect()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Reconfigured(ModelEndpoints):
    """A view of a parent's endpoints with one role's config replaced; the parent owns what it opened."""

    def __init__(self, parent: ModelEndpoints, role: str, config: EndpointConfig) -> None:
        super().__init__({**parent.configs, role: config}, gate_for=parent._gate_for)
        self._parent = parent
        self._role = role
        self._servers = parent._servers

    def client(self, role: str) -> ChatClient:
        if role != self._role:
            return self._parent.client(role)
        return super().client(role)

    def response_cache(self) -> ResponseCache:
        return self._parent.response_cache()

    def close(self) -> None:
        pass  # the parent closes its servers and cache
