"""A user's strategy, suite, agent and search in their own package join acon through entry points, with no edit
to acon.

The test builds a throwaway plugin distribution with setuptools into a temporary site directory (its
package and the metadata setuptools writes for it, offline), and runs the `acon` command line with that
directory on the path: the plugin's names appear in `acon suites list`, the strategy lists of `acon compare --help` and
`acon canary --strategy all`, config validation and its errors, a `compare` run, and an `optimize` job
whose search is the plugin's, configured in its own `[optimize.<name>]` section.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from optimizer.testing.scripted import scripted_models
from tests.conftest import ROOT, scripted

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "acon-pair-plugin"
version = "0.0.1"

[project.entry-points."acon.strategies"]
keep_two = "acon_pair.strategy:KeepTwo"

[project.entry-points."acon.suites"]
pair = "acon_pair.suite:PairSuite"

[project.entry-points."acon.agents"]
replayer = "acon_pair.agent:Replayer"

[project.entry-points."acon.searches"]
warm_only = "acon_pair.search:WarmOnly"

[tool.setuptools]
packages = ["acon_pair"]
"""

MODULES = {
    "__init__.py": '"""A throwaway acon plugin."""\n',
    "strategy.py": '''
        from typing import Literal

        from pydantic import Field

        from optimizer.context.moves import DropOld
        from optimizer.context.policy import RetentionPolicy
        from optimizer.context.strategies.base import ContextStrategy


        class KeepTwo(ContextStrategy):
            """Keep the last two agent steps."""

            type: Literal["keep_two"] = "keep_two"
            keep_last: int = Field(2, ge=1)

            def policy(self) -> RetentionPolicy:
                return RetentionPolicy(pinned=(), history=(DropOld(keep_last=self.keep_last),))
    ''',
    "suite.py": '''
        from typing import Literal

        from optimizer.world.suite import Suite, SuiteSource


        class PairSuite(SuiteSource):
            """Two of the smoke suite's tasks, one per split."""

            type: Literal["pair"] = "pair"

            def load(self) -> Suite:
                from tasks.smoke import SmokeSuite

                tasks = tuple(SmokeSuite().load().tasks)[:2]
                return Suite("pair", tasks, frozenset({tasks[0].id}), frozenset({tasks[1].id}))
    ''',
    "agent.py": '''
        from typing import ClassVar, Literal

        from optimizer.agent.kinds import AgentKind
        from optimizer.agent.reference import ReferenceAgent


        class Replayer(AgentKind):
            """Replays each task's reference solution, recalling nothing."""

            type: Literal["replayer"] = "replayer"
            uses_model: ClassVar[bool] = False
            reads_reference: ClassVar[bool] = True
            tier: ClassVar[int] = 0

            def build(self, task, endpoints):
                return ReferenceAgent(task.reference, recall_mode="never")

            def identity(self, endpoint):
                return {"agent": "replayer"}
    ''',
    "search.py": '''
        from typing import Literal

        from pydantic import Field

        from optimizer.search.searches.base import Search, SearchContext, SearchResult


        class WarmOnly(Search):
            """No rounds: the job selects among what its warm start screened."""

            type: Literal["warm_only"] = "warm_only"
            reason: str = Field("the warm start is enough", min_length=1)

            def run(self, ctx: SearchContext) -> SearchResult:
                ctx.state.search_done = True
                ctx.state.stopped = self.reason
                ctx.save()
                return SearchResult(ctx.best(), 0, self.reason)
    ''',
}

CONFIG = """\
name = "pair"
out = "{out}"
[suite]
type = "pair"
[run]
split = "all"
agent = "replayer"
[tracking]
enabled = false
[strategy]
type = "{strategy}"
"""


def build(root: Path, pyproject: str, modules: dict[str, str]) -> Path:
    """A plugin distribution built into a fresh site directory under `root`; returns that directory."""
    source = root / "src"
    (source / "acon_pair").mkdir(parents=True)
    (source / "pyproject.toml").write_text(pyproject)
    for name, text in modules.items():
        (source / "acon_pair" / name).write_text(textwrap.dedent(text).lstrip())
    target = root / "site"
    target.mkdir()
    # setuptools writes the distribution's metadata (entry points included) beside the package, the layout
    # `setup.py develop` installs; offline, and without the `wheel` package a wheel build would need.
    command = [sys.executable, "-W", "ignore", "-c", "import setuptools; setuptools.setup()", "-q", "egg_info"]
    done = subprocess.run(
        [*command, "--egg-base", str(target)], capture_output=True, text=True, timeout=300, cwd=source
    )
    assert done.returncode == 0, done.stderr[-3000:]
    shutil.copytree(source / "acon_pair", target / "acon_pair")
    return target


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> Path:
    target = build(tmp_path_factory.mktemp("plugin"), PYPROJECT, MODULES)
    entry_points = next(target.glob("*.egg-info")) / "entry_points.txt"
    assert "keep_two = acon_pair.strategy:KeepTwo" in entry_points.read_text()
    return target


@pytest.fixture
def acon(plugin, tmp_path):
    """Run `acon ...` in a subprocess that sees the plugin (and this checkout), in `tmp_path`."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), str(ROOT)]), "COLUMNS": "250"}
        env["ACON_HOME"] = str(tmp_path / "home")
        command = [sys.executable, "-m", "optimizer", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)

    return run


def config(tmp_path: Path, strategy: str, **extra: str) -> Path:
    path = tmp_path / f"{strategy}.toml"
    text = CONFIG.format(out=tmp_path / "job", strategy=strategy)
    path.write_text(text + "".join(f"{line}\n" for line in extra.values()))
    return path


def test_the_plugin_is_listed_by_every_command(acon, stub, tmp_path):
    listed = acon("suites", "list")
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if "│ pair" in line)
    assert [cell.strip() for cell in row.split("│")[2:6]] == ["pair", "2", "1", "1"]

    helped = acon("compare", "--help")
    assert helped.returncode == 0 and "keep_two" in helped.stdout and "replayer" in helped.stdout

    server = stub(scripted(["a short summary"]))
    out = tmp_path / "canary.json"
    canary = acon("canary", "--strategy", "all", "--json", str(out), "--base-url", server.base_url, "--model", "m")
    assert canary.returncode == 0, canary.stderr
    names = list(json.loads(out.read_text())["strategies"])
    assert names[-1] == "keep_two" and {"none", "fifo", "guideline", "oracle"} <= set(names)


def test_a_config_naming_the_plugin_runs_and_compares(acon, tmp_path):
    run = acon("run", str(config(tmp_path, "keep_two")), "--json", "run.json")
    assert run.returncode == 0, run.stderr
    summary = json.loads((tmp_path / "run.json").read_text())["summary"]
    assert summary["strategy"] == "keep_two" and summary["agent"] == "replayer" and summary["tasks"] == 2

    # The default `--strategies` is every deterministic baseline, the plugin's among them.
    compared = acon("compare", str(config(tmp_path, "none")), "--json", "cmp.json")
    assert compared.returncode == 0, compared.stderr
    rows = [r["strategy"] for r in json.loads((tmp_path / "cmp.json").read_text())["rows"]]
    assert rows[0] == "none" and rows[-1] == "keep_two"


@pytest.mark.parametrize(
    ("strategy", "extra", "message"),
    [
        ("keep_tow", {}, "'keep_two'"),  # the misspelled strategy's error lists the plugin's
        ("keep_two", {"bad": "keep_lats = 3"}, "unknown key 'strategy.keep_lats'"),  # its tag leaves the path
        ("keep_two", {"bad": "keep_last = 0"}, "'strategy.keep_last'"),
    ],
)
def test_config_errors_name_the_plugin(acon, tmp_path, strategy, extra, message):
    done = acon("run", str(config(tmp_path, strategy, **extra)))
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_unknown_agent_and_suite_names_list_the_plugin(acon, tmp_path):
    agent = acon("run", str(config(tmp_path, "keep_two")), "--agent", "replayr")
    assert agent.returncode == 2 and "known: llm, reference, replayer" in agent.stderr, agent.stderr
    shown = acon("suites", "show", "pairs")
    assert shown.returncode == 2 and "pair" in shown.stderr.split("known:")[1], shown.stderr


OPTIMIZE = """\
name = "pair-optimize"
out = "{out}"
[suite]
type = "pair"
[tracking]
enabled = false
[optimize]
search = "{search}"
screen_agent = "replayer"
warm_start = ["keep_two"]
[optimize.selection]
confirm_top = 0
[optimize.report]
final_strategies = ["none", "keep_two"]
{section}
[endpoints.compressor]
base_url = "{url}"
model = "scripted"
"""


def test_an_optimize_job_runs_the_plugin_search_from_its_own_section(acon, stub, tmp_path):
    url = stub(scripted_models).base_url

    def optimize(search: str, section: str) -> subprocess.CompletedProcess[str]:
        path = tmp_path / "optimize.toml"
        path.write_text(OPTIMIZE.format(out=tmp_path / "job", search=search, section=section, url=url))
        return acon("optimize", str(path))

    done = optimize("warm_only", '[optimize.warm_only]\nreason = "kept the warm start"')
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "job" / "report.json").read_text())
    assert report["stopped"] == "kept the warm start" and report["rounds"] == []
    assert {row["strategy"] for row in report["rows"]} >= {"none", "keep_two", "chosen"}

    for search, section, message in [
        ("warm_onyl", "", "unknown search 'warm_onyl'; known: acon, gepa, warm_only"),
        ("warm_only", "[optimize.warm_only]\nreasn = 'x'", "unknown key 'optimize.warm_only.reasn'"),
        ("warm_only", "[optimize.warm_only]\nreason = ''", "'optimize.warm_only.reason'"),
        ("acon", "[optimize.warm_only]\nreason = 'x'", "'warm_only.reason' has no effect with search = 'acon'"),
    ]:
        refused = optimize(search, section)
        assert refused.returncode == 2 and message in refused.stderr, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1


def test_a_broken_plugin_is_one_line_naming_its_entry_point(tmp_path):
    broken = PYPROJECT.replace("acon_pair.strategy:KeepTwo", "acon_pair.strategy:KeepTow")
    target = build(
        tmp_path / "broken", broken, {"__init__.py": MODULES["__init__.py"], "strategy.py": MODULES["strategy.py"]}
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(ROOT)])}
    done = subprocess.run(
        [sys.executable, "-m", "optimizer", "suites", "list"], capture_output=True, text=True, timeout=600, env=env
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "acon: error: entry point acon.strategies:keep_two (acon-pair-plugin: acon_pair.strategy:KeepTow) "
        "fails to load: AttributeError: module 'acon_pair.strategy' has no attribute 'KeepTow'"
    )
