"""Episodes as Ray tasks, on a local cluster started here or on an existing one (`address`).

Each Ray task rebuilds what an episode needs in its worker process (endpoints, compressor, caches; once
per process) and returns the episode's record; the driver writes it to the run directory, so the job's
store reads it back exactly as a local episode's, and a worker that dies before returning leaves nothing
behind. Ray re-runs a task whose worker died `max_retries` times (1: a killed episode runs once more);
the record of a finished task is written once, by the driver, however many attempts it took. An
interrupted run hands out no more tasks; episodes still in flight on workers are not recorded (a resumed
run does them).

Requests to each endpoint pass one named gate actor (`RayGate`), shared by every worker of the cluster:
the endpoint's `concurrency` is a cluster-wide bound, and a 429's `Retry-After` pauses all of them. The
embedded `local` model server stays per machine: a worker reaches (or starts) its own node's server.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any, Literal

from pydantic import Field

from optimizer.agent.episode import Episode
from optimizer.errors import ConfigError
from optimizer.evaluate.codec import decode_episode, encode_episode
from optimizer.evaluate.executors.base import EpisodeWork, Executor
from optimizer.llm.endpoint import EndpointConfig
from optimizer.llm.gate import MAX_PAUSE_S
from optimizer.world.task import Task

NAMESPACE = "acon"
POLL_S = 0.02  # how often a worker asks a full gate again


class RayExecutor(Executor):
    """Ray tasks; `concurrency` of them in flight (the driver hands out the next as one finishes)."""

    type: Literal["ray"] = "ray"
    address: str | None = Field(
        None, description='An existing cluster ("auto", "ray://host:10001"); None: start a local one here.'
    )
    cpus_per_episode: float = Field(1.0, ge=0, description="CPUs Ray reserves per episode (0.25 for I/O-bound).")
    local_cpus: int | None = Field(None, ge=1, description="CPUs a local cluster declares (None: this machine's).")
    max_retries: int = Field(1, ge=0, le=5, description="Re-runs of an episode whose worker died.")

    def episodes(
        self,
        work: EpisodeWork,
        tasks: Sequence[Task],
        *,
        concurrency: int,
        here: Callable[[Task], Episode],
        record: Callable[[Episode], int],
    ) -> Generator[tuple[Episode, int], None, None]:
        ray = require_ray()
        connect(self)
        remote = ray.remote(_remote_episode).options(
            num_cpus=self.cpus_per_episode,
            max_retries=self.max_retries,
            retry_exceptions=False,
        )
        shared = ray.put(work)
        pending = iter(tasks)
        running = [remote.remote(shared, task) for task in itertools.islice(pending, max(1, concurrency))]
        while running:
            done, running = ray.wait(running, num_returns=1)
            running += [remote.remote(shared, task) for task in itertools.islice(pending, len(done))]
            for ref in done:
                episode = decode_episode(ray.get(ref))
                yield episode, record(episode)
            del done, ref, episode


def require_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError('[run] executor = "ray" needs Ray: pip install "acon[ray]"') from None
    return ray


_CONNECT_LOCK = threading.Lock()


def connect(executor: RayExecutor) -> None:
    """Join the configured cluster once per process (a local one is started with this machine's CPUs)."""
    ray = require_ray()
    with _CONNECT_LOCK:
        if ray.is_initialized():
            return
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage report from an offline machine
        options: dict[str, Any] = {"namespace": NAMESPACE, "include_dashboard": False, "log_to_driver": False}
        if executor.address is None:
            options["num_cpus"] = executor.local_cpus or os.cpu_count() or 1
        try:
            ray.init(address=executor.address, **options)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ConfigError(f"cannot reach the Ray cluster at {executor.address}: {exc}".splitlines()[0]) from None


# ----------------------------------------------------------------------------------------------- workers

# Per worker process: endpoints by their configs (connected once, whatever the strategy), and episode
# services by strategy and agent (a job screens many candidates on the same endpoints).
_ENDPOINTS: dict[str, Any] = {}
_SERVICES: dict[str, Any] = {}
_WORKER_LOCK = threading.Lock()


def _remote_episode(work: EpisodeWork, task: Task) -> dict[str, Any]:
    from optimizer.agent.loop import run_episode

    endpoints, services = _worker_services(work)
    compressor = services.compressor
    attempt = compressor.attempt(f"{work.attempt_prefix}::{task.id}") if compressor else contextlib.nullcontext()
    with attempt:
        episode = run_episode(task, work.agent.build(task, endpoints), work.strategy, services)
    return encode_episode(episode)


def _worker_services(work: EpisodeWork) -> tuple[Any, Any]:
    """This worker's endpoints and episode services for `work`, built on its first episode and kept."""
    from optimizer.evaluate.endpoints import ModelEndpoints
    from optimizer.evaluate.services import services_for

    endpoints_key = _digest({role: config.model_dump(mode="json") for role, config in work.endpoints.items()})
    services_key = _digest(
        [endpoints_key, work.strategy.model_dump(mode="json"), repr(work.agent), work.max_total_steps]
    )
    with _WORKER_LOCK:
        if endpoints_key not in _ENDPOINTS:
            endpoints = None
            if work.endpoints:
                endpoints = ModelEndpoints(work.endpoints, log=lambda m: None, gate_for=RayGate.named).connect()
            _ENDPOINTS[endpoints_key] = endpoints
        endpoints = _ENDPOINTS[endpoints_key]
        if services_key not in _SERVICES:
            services = services_for(work.strategy, work.agent, endpoints)
            services.max_total_steps = work.max_total_steps
            _SERVICES[services_key] = services
        return endpoints, _SERVICES[services_key]


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


# -------------------------------------------------------------------------------------- the shared gate


class _GateActor:
    """Slots of one endpoint, leased: a lease older than a request can last (a dead worker's) expires."""

    def __init__(self, limit: int, lease_s: float) -> None:
        self.limit = limit
        self.lease_s = lease_s
        self.leases: dict[str, float] = {}
        self.paused_until = 0.0
        self.most = 0  # most leases ever held at once, for tests and benchmarks

    def acquire(self, lease: str) -> float:
        """0.0 when the slot is taken, else how long to wait before asking again."""
        now = time.time()
        self.leases = {k: t for k, t in self.leases.items() if now - t < self.lease_s}
        if now < self.paused_until:
            return self.paused_until - now
        if len(self.leases) >= self.limit:
            return POLL_S
        self.leases[lease] = now
        self.most = max(self.most, len(self.leases))
        return 0.0

    def release(self, lease: str) -> None:
        self.leases.pop(lease, None)

    def pause(self, seconds: float) -> None:
        self.paused_until = max(self.paused_until, time.time() + min(seconds, MAX_PAUSE_S))

    def stats(self) -> dict[str, Any]:
        return {"limit": self.limit, "held": len(self.leases), "most": self.most}


class RayGate:
    """A client's view of its endpoint's gate actor (see `optimizer.llm.gate`)."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    @classmethod
    def named(cls, base_url: str, config: EndpointConfig) -> RayGate:
        return cls(gate_actor(base_url, config))

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        ray = require_ray()
        lease = uuid.uuid4().hex
        while (wait := ray.get(self.actor.acquire.remote(lease))) > 0:
            time.sleep(wait)
        try:
            yield
        finally:
            self.actor.release.remote(lease)

    def pause(self, seconds: float) -> None:
        require_ray().get(self.actor.pause.remote(seconds))


def gate_actor(base_url: str, config: EndpointConfig) -> Any:
    """The cluster's one gate actor of an endpoint (created by whichever worker asks first)."""
    ray = require_ray()
    name = "acon-gate-" + hashlib.sha256(f"{base_url}|{config.model}".encode()).hexdigest()[:16]
    lease_s = config.timeout_s + 5.0
    return (
        ray.remote(_GateActor)
        .options(
            name=name,
            namespace=NAMESPACE,
            get_if_exists=True,
            num_cpus=0,
        )
        .remote(config.concurrency, lease_s)
    )
