"""Bad input catalogue: each case gives one clear line on stderr (what, and where), a non-zero exit (2 for
configuration, 3 for an endpoint that cannot serve), and leaves everything already written as it was.

Every case runs the real CLI in-process. `tree` is the test's whole temporary directory: its files are
compared byte for byte before and after, so an overwritten or deleted file fails the case.
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest

from optimizer.search.job import OptimizationJob
from tests.conftest import ROOT
from tests.reliability.conftest import hold, write_job

EXAMPLE = ROOT / "experiments" / "data" / "example_trajectories.jsonl"


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # `acon run` writes under ./runs


def config(tmp: Path, text: str) -> str:
    path = tmp / "exp.toml"
    path.write_text(text)
    return str(path)


BASE = 'name = "x"\n[suite]\ntype = "smoke"\n'


@pytest.fixture(scope="module")
def finished_job(tmp_path_factory, scripted_url) -> Path:
    """A small finished optimize job (scripted models), copied into a test's directory by `job_copy`."""
    tmp = tmp_path_factory.mktemp("done")
    path = write_job(tmp, scripted_url, train_limit=3, test_limit=1, acon={"llm_proposers": False})
    from optimizer.config import load_experiment

    OptimizationJob(load_experiment(path), log=lambda m: None).run()
    return tmp


@pytest.fixture
def job_copy(finished_job, tmp_path) -> tuple[Path, Path]:
    """(config, job directory) of a finished job, inside this test's tmp_path."""
    shutil.copytree(finished_job / "job", tmp_path / "job")
    text = (finished_job / "job.toml").read_text().replace(str(finished_job / "job"), str(tmp_path / "job"))
    (tmp_path / "job.toml").write_text(text)
    return tmp_path / "job.toml", tmp_path / "job"


# ---------------------------------------------------------------------------------------------- config keys


def test_unknown_top_level_key(fails, tmp_path):
    path = config(tmp_path, BASE.replace('name = "x"', 'name = "x"\ncolour = "red"'))
    fails("run", path, says=(path, "unknown key 'colour'"))


def test_unknown_nested_key(fails, tmp_path):
    path = config(tmp_path, BASE + "[optimize]\nroundz = 2\n")
    fails("optimize", path, says=(path, "unknown key 'optimize.roundz'"))


def test_missing_key(fails, tmp_path):
    path = config(tmp_path, '[suite]\ntype = "smoke"\n')
    fails("run", path, says=(path, "missing key 'name'"))


def test_missing_suite_section(fails, tmp_path):
    path = config(tmp_path, 'name = "x"\n')
    fails("run", path, says=(path, "missing key 'suite'"))


def test_mistyped_value(fails, tmp_path):
    path = config(tmp_path, BASE + '[optimize.budget]\nrounds = "two"\n')
    fails("optimize", path, says=(path, "'optimize.budget.rounds'", "'two'"))


def test_value_out_of_range(fails, tmp_path):
    path = config(tmp_path, BASE + "[endpoints.compressor]\nmax_retries = -1\n")
    fails("run", path, says=(path, "'endpoints.compressor.max_retries'", "-1"))


def test_invalid_toml_names_the_line(fails, tmp_path):
    path = config(tmp_path, BASE + "[run]\nlimit = = 3\n")
    fails("run", path, says=(path, "invalid TOML", "line 5"))


def test_config_file_not_found(fails, tmp_path):
    fails("optimize", str(tmp_path / "nope.toml"), says=("config file not found", "nope.toml"))


def test_unknown_suite_type(fails, tmp_path):
    path = config(tmp_path, 'name = "x"\n[suite]\ntype = "smok"\n')
    fails("run", path, says=(path, "'suite'", "smok"))


def test_unknown_strategy_type(fails, tmp_path):
    path = config(tmp_path, BASE + '[strategy]\ntype = "fifo_plus"\n')
    fails("run", path, says=(path, "'strategy'", "fifo_plus"))


def test_the_oracle_with_a_real_agent(fails, tmp_path):
    path = config(tmp_path, BASE)
    fails("run", path, "--strategy", "oracle", "--agent", "llm", says=("oracle", "tier 0 only"))


def test_endpoint_url_without_scheme(fails, tmp_path):
    path = config(tmp_path, BASE + '[endpoints.agent]\nbase_url = "localhost:8000/v1"\n')
    fails("run", path, says=(path, "'endpoints.agent.base_url'", "http"))


def test_api_key_variable_not_set(fails, tmp_path, monkeypatch, stub):
    monkeypatch.delenv("ACON_TEST_MISSING_KEY", raising=False)
    url = stub(lambda request: "{}").base_url
    path = config(tmp_path, BASE + f'[endpoints.agent]\nbase_url = "{url}"\napi_key_env = "ACON_TEST_MISSING_KEY"\n')
    fails("run", path, "--limit", "1", says=("ACON_TEST_MISSING_KEY", "api_key_env", "not set"))


# ---------------------------------------------------------------------------------------------- endpoints


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed when the block ends: nothing listens there


def test_unreachable_endpoint(fails, tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    path = config(tmp_path, BASE + f'[endpoints.agent]\nbase_url = "{url}"\nmax_retries = 0\n')
    fails("run", path, code=3, says=(url, "not answering", "APIConnectionError"))


def test_wrong_model_name(fails, tmp_path, stub):
    url = stub(lambda request: "{}", models=("qwen2.5-coder-1.5b",)).base_url
    path = config(tmp_path, BASE + f'[endpoints.agent]\nbase_url = "{url}"\nmodel = "qwen-typo"\n')
    fails("run", path, code=3, says=(url, "'qwen-typo'", "404"))


def test_unreachable_endpoint_of_an_optimize_job_can_be_rerun(fails, run_cli, tmp_path, scripted_url):
    """The job never started: once the endpoint is fixed, the same command runs (no --resume needed)."""
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    path = write_job(tmp_path, url, endpoint={"max_retries": 0})
    fails("optimize", str(path), code=3, says=(url, "not answering"))
    path.write_text(path.read_text().replace(url, scripted_url))
    code, _, err = run_cli("optimize", str(path))
    assert code == 0, err


# ---------------------------------------------------------------------------------------------- suites


def test_suite_filter_that_leaves_no_task(fails, tmp_path, scripted_url):
    path = write_job(tmp_path, scripted_url, suite={"max_output_tokens": 10})
    fails("optimize", str(path), says=("suite 'builtin' has no tasks", "train"))
    assert not (tmp_path / "job").exists()


def test_unknown_builtin_family(fails, tmp_path):
    path = config(tmp_path, 'name = "x"\n[suite]\ntype = "builtin"\nfamilies = ["refund", "bakery"]\n')
    fails("run", path, "--agent", "reference", says=("unknown families", "bakery"))


def test_replay_parquet_with_a_broken_row(fails, run_cli, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    assert run_cli("suites", "import", str(EXAMPLE), "--name", "bikes", "--out", str(tmp_path))[0] == 0
    file = tmp_path / "bikes.parquet"
    table = pq.read_table(file)
    reference = table.column("reference").to_pylist()
    reference[1] = reference[1][: len(reference[1]) // 2]  # row 2: its reference cut in half
    pq.write_table(table.set_column(table.schema.get_field_index("reference"), "reference", pa.array(reference)), file)
    path = config(tmp_path, f'name = "x"\n[suite]\ntype = "replay"\npath = "{file}"\n')
    fails("run", path, "--agent", "reference", says=(str(file), "row 2", "malformed"))


def test_replay_suite_file_missing(fails, tmp_path):
    path = config(tmp_path, f'name = "x"\n[suite]\ntype = "replay"\npath = "{tmp_path / "gone.parquet"}"\n')
    fails("run", path, "--agent", "reference", says=("replay suite file not found", "gone.parquet"))


def test_trajectory_file_with_invalid_json_on_line_n(fails, tmp_path):
    lines = EXAMPLE.read_text().splitlines()
    lines[2] = lines[2][:-7]  # line 3 loses its closing characters
    source = tmp_path / "runs.jsonl"
    source.write_text("\n".join(lines) + "\n")
    fails(
        "suites",
        "import",
        str(source),
        "--name",
        "bikes",
        "--out",
        str(tmp_path / "suites"),
        says=(f"{source}:3:", "invalid JSON"),
    )
    assert not (tmp_path / "suites").exists()
    path = config(tmp_path, f'name = "x"\n[suite]\ntype = "replay"\npath = "{source}"\n')
    fails("run", path, "--agent", "reference", says=(f"{source}:3:", "invalid JSON"))


# ---------------------------------------------------------------------------------------------- guidelines


def _guideline(tmp: Path, text: str) -> Path:
    path = tmp / "broken.md"
    path.write_text(text)
    return path


SEED = (ROOT / "guidelines" / "seed" / "seed.md").read_text()


def test_guideline_with_broken_front_matter(fails, tmp_path, scripted_url):
    broken = _guideline(tmp_path, SEED.replace("over: 1024,", "over: [1024,"))
    path = write_job(tmp_path, scripted_url, guideline=broken)
    fails("optimize", str(path), says=(str(broken), "broken front matter", "line"))
    assert not (tmp_path / "job").exists()


def test_guideline_without_front_matter(fails, tmp_path, scripted_url):
    broken = _guideline(tmp_path, SEED.split("---", 2)[2])
    path = write_job(tmp_path, scripted_url, guideline=broken)
    fails("optimize", str(path), says=(str(broken), "no front matter"))


def test_guideline_that_breaks_the_retention_contract(fails, tmp_path, scripted_url):
    broken = _guideline(tmp_path, SEED.replace("  history:\n", "  history:\n    - {move: clear, classes: [skill]}\n"))
    path = write_job(tmp_path, scripted_url, guideline=broken)
    fails(
        "optimize",
        str(path),
        says=(str(broken), "policy.history.0.classes", "skill: move 'clear' breaks the retention contract"),
    )


def test_guideline_file_missing(fails, tmp_path, scripted_url):
    path = write_job(tmp_path, scripted_url, guideline=tmp_path / "nope.md")
    fails("optimize", str(path), says=("guideline file not found", "nope.md"))
    assert not (tmp_path / "job").exists()


# ---------------------------------------------------------------------------------------------- output


def test_output_directory_not_writable(fails, tmp_path, scripted_url):
    (tmp_path / "taken").write_text("a file, not a directory\n")
    path = write_job(tmp_path, scripted_url)
    path.write_text(path.read_text().replace(str(tmp_path / "job"), str(tmp_path / "taken" / "job")))
    fails("optimize", str(path), says=("not writable", str(tmp_path / "taken" / "job")))


def test_resume_on_a_job_of_a_different_config(fails, job_copy):
    path, job = job_copy
    path.write_text(path.read_text().replace("rounds = 1", "rounds = 3"))
    fails("optimize", str(path), "--resume", says=(str(job), "different config"))


def test_resume_with_nothing_to_resume(fails, tmp_path, scripted_url):
    path = write_job(tmp_path, scripted_url)
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "notes.txt").write_text("mine\n")
    fails("optimize", str(path), "--resume", says=("nothing to resume", str(tmp_path / "job")))


def test_rerun_of_a_finished_job_without_resume(fails, job_copy):
    path, job = job_copy
    fails("optimize", str(path), says=(str(job), "--resume"))


def test_damaged_state_on_resume(fails, job_copy):
    path, job = job_copy
    state = job / "state.json"
    state.write_text(state.read_text()[:200])
    fails("optimize", str(path), "--resume", says=(str(state), "damaged"))


@pytest.fixture
def held(tmp_path):
    """`held(directory)`: another process holds the directory's lock for the rest of the test; returns its pid."""
    holders = []

    def start(directory: Path) -> int:
        holders.append(hold(directory))
        return holders[-1].pid

    yield start
    for process in holders:
        process.kill()
        process.wait()


def test_job_directory_in_use_by_another_process(fails, job_copy, held):
    path, job = job_copy
    pid = held(job)
    fails("optimize", str(path), "--resume", code=4, says=(str(job), "in use by another acon process", f"pid {pid}"))


def test_run_directory_in_use_by_another_process(fails, tmp_path, run_cli, held):
    path = config(tmp_path, BASE)
    assert run_cli("run", path, "--agent", "reference", "--limit", "1")[0] == 0
    (run_dir,) = (tmp_path / "runs" / "x" / "runs").iterdir()
    pid = held(run_dir)
    fails("run", path, "--agent", "reference", "--limit", "1", code=4, says=(run_dir.name, f"pid {pid}"))


def test_damaged_job_file(fails, job_copy):
    path, job = job_copy
    (job / "job.json").write_text('{"key": ')
    fails("optimize", str(path), "--resume", says=(str(job / "job.json"), "corrupt"))


# ---------------------------------------------------------------------------------------------- other commands


def test_export_of_a_directory_that_is_no_job(fails, tmp_path):
    (tmp_path / "somewhere").mkdir()
    fails("export", str(tmp_path / "somewhere"), code=1, says=("no state.json", "somewhere"))


def test_export_in_an_unknown_format(fails, job_copy):
    _, job = job_copy
    fails("export", str(job), "--format", "xml", says=("--format", "'xml'"))


def test_diff_of_a_directory_without_pairs(fails, tmp_path):
    (tmp_path / "empty").mkdir()
    fails("diff", str(tmp_path / "empty"), code=1, says=("no pair diffs", "empty"))


def test_unknown_strategy_on_the_command_line(fails, tmp_path):
    path = config(tmp_path, BASE)
    fails("run", path, "--strategy", "zip", "--agent", "reference", says=("unknown strategy 'zip'",))


# ---------------------------------------------------------------------------------------------- command lines


def test_unknown_option(fails, tmp_path):
    path = config(tmp_path, BASE)
    fails("run", path, "--bogus", says=("No such option", "--bogus", "acon run --help"))


def test_unknown_command(fails):
    fails("nosuchcmd", says=("No such command 'nosuchcmd'", "acon --help"))


def test_missing_argument(fails):
    fails("run", says=("Missing argument", "acon run --help"))


def test_option_of_the_wrong_type(fails, tmp_path):
    path = config(tmp_path, BASE)
    fails("run", path, "--limit", "three", says=("'--limit'", "acon run --help"))


def test_export_of_a_json_file_that_is_no_guideline(fails, tmp_path):
    (tmp_path / "report.json").write_text('{"rounds": []}\n')
    fails("export", str(tmp_path / "report.json"), says=("report.json", "not a guideline"))


def test_export_of_a_guideline_json_with_a_broken_field(fails, tmp_path):
    (tmp_path / "g.json").write_text('{"history": "h", "observation": "o", "policy": {"budget_tokens": "big"}}\n')
    fails("export", str(tmp_path / "g.json"), says=("g.json", "policy.budget_tokens"))


def test_export_of_a_file_that_is_neither(fails, tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    fails("export", str(tmp_path / "notes.txt"), says=("notes.txt", "a job directory", "guideline file"))


def test_export_of_a_path_that_does_not_exist(fails, tmp_path):
    fails("export", str(tmp_path / "gone"), says=("gone", "does not exist", "a job directory"))


def test_export_of_a_broken_guideline_file(fails, tmp_path):
    (tmp_path / "g.md").write_text("no front matter here\n")
    fails("export", str(tmp_path / "g.md"), says=("g.md", "no front matter"))


# ---------------------------------------------------------------------------------------------- contract

UNPINNED = ROOT / "guidelines" / "examples" / "unpinned.md"


def test_run_of_a_guideline_that_unpins_skills(fails, tmp_path):
    path = config(tmp_path, BASE + f'[strategy]\ntype = "guideline"\nguideline = "{UNPINNED}"\n')
    fails("run", path, "--agent", "reference", says=(str(UNPINNED), "skill unpinned", "allow_unpinned"))
    assert not (tmp_path / "runs").exists()


def test_export_of_a_guideline_that_unpins_skills(fails, tmp_path):
    fails(
        "export",
        str(UNPINNED),
        "--out",
        str(tmp_path / "g.md"),
        says=(str(UNPINNED), "skill unpinned", "--allow-unpinned"),
    )
    assert not (tmp_path / "g.md").exists()


@pytest.mark.parametrize("command", ["run", "compare"])
@pytest.mark.parametrize("limit", ["0", "-2"])
def test_a_limit_of_no_task(fails, tmp_path, command, limit):
    path = config(tmp_path, BASE)
    fails(command, path, "--agent", "reference", "--limit", limit, says=("--limit must be at least 1", limit))


# ---------------------------------------------------------------------------------------------- output files


def test_export_to_a_directory(fails, tmp_path):
    (tmp_path / "out").mkdir()
    learned = str(ROOT / "guidelines" / "learned" / "quickstart.md")
    fails("export", learned, "--out", str(tmp_path / "out"), says=(str(tmp_path / "out"), "a directory"))


@pytest.mark.parametrize("command", ["run", "compare"])
def test_json_to_a_directory(fails, tmp_path, command):
    (tmp_path / "out").mkdir()
    path = config(tmp_path, BASE)
    fails(command, path, "--agent", "reference", "--json", str(tmp_path / "out"), says=("--json", "a directory"))
    assert not (tmp_path / "runs").exists()  # refused before any episode ran


def test_diff_json_to_a_directory(fails, job_copy, tmp_path):
    _, job = job_copy
    (tmp_path / "out").mkdir()
    fails("diff", str(job), "--json", str(tmp_path / "out"), says=("--json", "a directory"))


# ---------------------------------------------------------------------------------------------- recall listing


def _guideline_with(tmp_path, policy_line: str) -> Path:
    seed = (ROOT / "guidelines" / "seed" / "seed.md").read_text()
    path = tmp_path / "listed.md"
    path.write_text(seed.replace("policy:\n", f"policy:\n  {policy_line}\n", 1))
    return path


@pytest.mark.parametrize("value", ["sometimes", "true", "[always]"])
def test_export_of_a_guideline_with_an_unknown_recall_listing(fails, tmp_path, value):
    path = _guideline_with(tmp_path, f"recall_tool: {value}")
    fails("export", str(path), "--out", str(tmp_path / "out.md"), says=(str(path), "recall_tool"))
    assert not (tmp_path / "out.md").exists()


def test_run_of_a_guideline_with_an_unknown_recall_listing(fails, tmp_path):
    guideline = _guideline_with(tmp_path, "recall_tool: sometimes")
    path = config(tmp_path, BASE + f'[strategy]\ntype = "guideline"\nguideline = "{guideline}"\n')
    fails("run", path, "--agent", "reference", says=(str(guideline), "recall_tool"))
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("goal", ["0", "1.5", '"half"'])
def test_a_confirmation_peak_goal_outside_zero_to_one(fails, tmp_path, goal):
    path = config(tmp_path, BASE + f"[optimize.selection]\nconfirm_top = 2\nconfirm_peak_goal = {goal}\n")
    fails("optimize", path, says=("confirm_peak_goal",))
    assert not (tmp_path / "runs").exists()
