"""CONTRIBUTING.md's worked example is real: its blocks, written out as a package and registered from its
entry points, give a strategy, a suite, an agent and a proposer that do what the text says. Its walk from
`acon optimize` to a changed message names files that exist and what each of them defines."""

from __future__ import annotations

import ast
import re
import tomllib

import pytest
from pydantic import ValidationError

from optimizer import registry
from optimizer.agent.kinds import AgentKind
from optimizer.agent.loop import EpisodeServices, run_episode
from optimizer.context.guideline import SEED_GUIDELINE, read_guideline
from optimizer.context.strategies import STRATEGY_NAMES, ContextStrategy, parse_strategy
from optimizer.registry import Registry
from optimizer.search.candidate import Candidate
from optimizer.search.proposers import PROPOSERS, ProposalInput, Proposer
from optimizer.world.suite import SuiteSource
from tests.conftest import ROOT
from tests.context.conftest import assert_contract, run

TEXT = (ROOT / "CONTRIBUTING.md").read_text()
MODULES = dict(re.findall(r"```python\n# (\S+)\n(.*?)```", TEXT, re.DOTALL))
ENTRY_POINTS = tomllib.loads(re.search(r"```toml\n(.*?)```", TEXT, re.DOTALL).group(1))["project"]["entry-points"]


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """The example package on the path; `plugin(group, base)` is a fresh registry that finds its entries."""
    for path, code in MODULES.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(code)
    (tmp_path / "my_acon" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    declared = {group: [(n, v, "my-acon") for n, v in entries.items()] for group, entries in ENTRY_POINTS.items()}
    monkeypatch.setattr(registry, "plugin_entries", lambda group: declared.get(group, []))
    return lambda group, base: Registry(group, base, what=group.removeprefix("acon."))


def test_the_example_has_one_module_and_one_entry_point_per_extension_point():
    assert sorted(MODULES) == ["my_acon/agent.py", "my_acon/proposer.py", "my_acon/strategy.py", "my_acon/suite.py"]
    assert sorted(ENTRY_POINTS) == ["acon.agents", "acon.proposers", "acon.strategies", "acon.suites"]
    assert all(len(entries) == 1 for entries in ENTRY_POINTS.values())


def test_the_strategy_joins_the_baselines_and_keeps_the_contract(plugin):
    strategies = plugin("acon.strategies", ContextStrategy)
    assert strategies.names() == (*STRATEGY_NAMES, "recent_two")
    cls = strategies.get("recent_two")
    assert cls.kind == "baseline" and "recent_two" in [
        n for n in strategies.names() if strategies.get(n).kind == "baseline"
    ]
    strategy = strategies.adapter().validate_python({"type": "recent_two", "keep_last": 3})
    assert strategies.adapter().validate_python(strategy.model_dump()) == strategy
    with pytest.raises(ValidationError):
        strategies.adapter().validate_python({"type": "recent_two", "keep_last": 0})
    with pytest.raises(ValidationError, match="'recent_two'"):
        strategies.adapter().validate_python({"type": "recnet_two"})
    result = run(cls())
    assert_contract(result)
    assert result.final_tokens() < run(parse_strategy("none")).final_tokens()
    assert not cls().uses_compressor


def test_the_suite_is_known_by_name_and_loads_the_refunds(plugin):
    suites = plugin("acon.suites", SuiteSource)
    cls = suites.get("refund_desk")
    assert dict(cls.named()) == {"refund_desk": cls}
    suite = cls().load()
    assert suite.name == "refund_desk" and len(suite.tasks) == 2
    assert {task.meta["family"] for task in suite.tasks} == {"refund"}
    assert suite.train_ids | suite.test_ids == {task.id for task in suite.tasks}


def test_the_agent_answers_at_once_and_fails_the_checker(plugin):
    agents = plugin("acon.agents", AgentKind)
    kind = agents.adapter().validate_python({"type": "quitter"})
    assert not kind.uses_model and kind.tier == 0 and not kind.reads_reference
    task = plugin("acon.suites", SuiteSource).get("refund_desk")().load().tasks[0]
    episode = run_episode(task, kind.build(task, None), parse_strategy("none"), EpisodeServices())
    assert episode.outcome == "failure" and len(episode.tool_calls) == 0


def test_the_proposer_is_a_co_step_that_halves_the_budget(plugin):
    proposers = plugin("acon.proposers", Proposer)
    assert proposers.names() == (*PROPOSERS.names(), "halve_budget")
    proposer = proposers.get("halve_budget")()
    assert proposer.step == "co" and not proposer.uses_llm
    parent = Candidate(read_guideline(SEED_GUIDELINE), "seed", 0)
    budgets = []
    for _ in range(2):
        (proposal,) = proposer.propose(ProposalInput(parent=parent, pairs=()))
        budgets.append(proposal.guideline.policy.budget_tokens)
        parent = Candidate(proposal.guideline, proposal.origin, 1)
    assert budgets == [8000, 4000] and parent.guideline.name.endswith("budget4000")


FITS = TEXT.split("## How it fits together", 1)[1].split("\n## ", 1)[0]


def _defines(path, dotted: str) -> bool:
    """Whether the module at `path` defines `dotted` (`f` or `Class.method`) at module or class level."""
    scope = ast.parse(path.read_text()).body
    for name in dotted.split("."):
        node = next((n for n in scope if getattr(n, "name", None) == name), None)
        if node is None:
            return False
        scope = getattr(node, "body", [])
    return True


def test_every_path_the_walk_names_exists():
    named = set(re.findall(r"[\w/]+\.py|\w+(?:/\w+)*/(?=[\s;)])", FITS))
    assert len(named) > 20
    missing = sorted(p for p in named if not (ROOT / "optimizer" / p).exists())
    assert not missing, f"CONTRIBUTING.md's walk names paths that are gone: {missing}"


def test_each_step_of_the_walk_names_what_its_module_defines():
    steps = re.findall(r"^\S.{13}(\S+\.py) +(\w+(?:\.\w+)?)", FITS.split("```text\n", 1)[1], re.MULTILINE)
    assert len(steps) == 10
    wrong = [f"{path}: {name}" for path, name in steps if not _defines(ROOT / "optimizer" / path, name)]
    assert not wrong, f"CONTRIBUTING.md's walk names what its module does not define: {wrong}"
