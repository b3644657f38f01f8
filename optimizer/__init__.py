"""acon: learn context-compression guidelines for LLM agents.

The package is built in layers. A module imports only from layers below its own, at module level or
inside a function alike; names on one line are peers and do not import each other. The list is the
order `tests/test_import_layers.py` checks the source against (it reads it from here), bottom first:

    _offline
    optimizer
    errors
    tokens, storage, locking, untrusted, registry, interrupts, jsontypes, stats
    llm, world
    tasks
    context
    runtime
    agent, adapters
    summary
    evaluate
    mining
    report
    search
    config
    tracking
    cli
    testing, __main__

Why this order. At the bottom sit what every layer may need and that knows nothing of the domain: this
file's version, errors, token counts, atomic files, locks, the untrusted-text fence, SIGTERM as a clean
exit, JSON as a type. `llm` (clients and endpoints) and `world` (tasks, tools, retention classes) are the two
vocabularies the rest speaks; `tasks` builds suites out of `world`'s types. `context` is the retention
contract and its strategies, over a history of world entries. `runtime` applies one guideline to one
live conversation (every stage of the contract, rendering included); the agent loop and the adapters
(OpenAI SDK, LangChain) are its clients, so they sit above it and it knows neither. `summary` learns
instructions for the summarizers users already run (LangChain, Anthropic compaction): target strategies
over `context`, screened through `runtime`, exported through `adapters`. `agent` owns the
episode record, so what reads or replays episodes sits above it: `evaluate` runs episodes, scores them
and holds the canary; `mining` pairs and diffs evaluated episodes. `report` is what a job found, as data:
the Pareto front, the report tree with its checks, its Markdown and its `report.json`, the
summary-instruction job's report; the search builds it and tracking logs it, so it sits below both.
`search` proposes and selects guidelines from those diffs. `config` is the experiment file: its sections
are the strategy, suite, executor and proposer unions from below, so it sits above all of them.
`evaluate` and `search` receive an experiment config built by a caller above and name its type only under
`if TYPE_CHECKING:` (the one kind of import the test exempts: it runs nothing). `tracking` records jobs
(runs, candidates, fronts) into MLflow; of `search` it imports the job's events alone (`search/events.py`,
and `search` nothing of it: the same test, `if TYPE_CHECKING:` included). `cli` wires everything to
commands, and `testing` (stub servers, scripted agents) drives the CLI in tests.

Within a layer, too, no modules import each other in a circle, lazily or not: a module imports a sibling
by its own name, not through a package `__init__` that imports the module in turn (the same test; its
docstring says what it counts).

`registry` builds each extension point's union (strategies, suites, agents, proposers) from entry points:
it imports the classes by name when the union is first built, never by an import statement, so `world`
knows the suite base and `tasks` registers its suites without `world` importing `tasks`.
"""

from __future__ import annotations

from optimizer import _offline as _offline  # must run before dspy / mlflow / datasets are imported

__version__ = "0.1.0"
