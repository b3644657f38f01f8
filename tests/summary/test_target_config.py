"""`[optimize.target]`: the summarizer a job learns instructions for, from the `acon.targets` registry."""

from __future__ import annotations

import pytest

from optimizer.config import load_experiment
from optimizer.errors import ConfigError
from optimizer.registry import own_entries
from optimizer.summary.anthropic_target import AnthropicCompaction
from optimizer.summary.langchain_target import LangChainSummary
from optimizer.summary.targets import TARGETS
from optimizer.summary.targets.anthropic import AnthropicTarget
from optimizer.summary.targets.langchain import LangChainTarget

HEAD = 'name = "t"\n[suite]\ntype = "builtin"\n[optimize]\n'


def _load(tmp_path, body: str):
    path = tmp_path / "t.toml"
    path.write_text(HEAD + body)
    return load_experiment(path)


def test_the_targets_are_entry_points_of_their_own_group():
    assert [name for name, _ in own_entries("acon.targets")] == ["langchain", "anthropic"]
    assert TARGETS.names() == ("langchain", "anthropic")
    assert TARGETS.get("langchain") is LangChainTarget and TARGETS.get("anthropic") is AnthropicTarget


def test_a_target_table_builds_its_strategy_with_the_knobs(tmp_path):
    config = _load(
        tmp_path,
        "[optimize.budget]\nrounds = 2\n[optimize.target]\ntype = 'langchain'\n"
        "trigger_tokens = 900\nkeep_messages = 6\n",
    )
    target = config.optimize.target
    assert isinstance(target, LangChainTarget) and target.knobs() == {"trigger_tokens": 900, "keep_messages": 6}
    strategy = target.strategy("Keep ids.")
    assert isinstance(strategy, LangChainSummary)
    assert (strategy.trigger_tokens, strategy.keep_messages, strategy.instructions) == (900, 6, "Keep ids.")
    assert target.strategy(None).instruction_text() == target.default().text  # None: the installed default
    anthropic = _load(tmp_path, "[optimize.target]\ntype = 'anthropic'\ntrigger_tokens = 2000\n").optimize.target
    assert isinstance(anthropic.strategy(None), AnthropicCompaction) and anthropic.default().text is None
    # Round trip: the dumped config validates to the same target.
    assert type(config).model_validate(config.model_dump()).optimize.target == target


def test_no_target_keeps_the_guideline_search(tmp_path):
    assert _load(tmp_path, "[optimize.budget]\nrounds = 2\n").optimize.target is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("target = 'openhands'\n", "'optimize.target': Input tag 'openhands' found using 'type' does not match"),
        ("target = 'langchain'\n", "missing key 'optimize.target.trigger_tokens'"),
        ("[optimize.target]\ntype = 'anthropic'\ntrigger_tokens = 0\n", "'optimize.target.trigger_tokens'"),
        (
            "[optimize.target]\ntype = 'langchain'\ntrigger_tokens = 900\nkeep_messages = 5\n",
            "'optimize.target.keep_messages': keep_messages must be even",
        ),
        (
            "[optimize.target]\ntype = 'anthropic'\ntrigger_tokens = 900\nkeep = 3\n",
            "unknown key 'optimize.target.keep'",
        ),
        (
            "[optimize.acon]\nproposers = []\n[optimize.target]\ntype = 'anthropic'\ntrigger_tokens = 900\n",
            "'optimize': 'acon.proposers' has no effect with a target",
        ),
        ("target = 3\n", "'optimize.target'"),
        (
            "[optimize.target]\ntype = 'langchain'\ntrigger_tokens = 900\nparaphrases = -1\n",
            "'optimize.target.paraphrases': Input should be greater than or equal to 0",
        ),
        (
            "[optimize.target]\ntype = 'anthropic'\ntrigger_tokens = 900\ntrigger_choices = [1200, 0]\n",
            "'optimize.target.trigger_choices.1': Input should be greater than 0",
        ),
    ],
)
def test_a_bad_target_is_one_line(tmp_path, body, message):
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, body)
    text = str(caught.value)
    assert message in text and "\n" not in text and text.startswith(str(tmp_path / "t.toml"))


def test_the_example_config_runs_the_langchain_target_on_local_models():
    from tests.conftest import ROOT

    config = load_experiment(ROOT / "experiments" / "summary_builtin.toml")
    target = config.optimize.target
    assert isinstance(target, LangChainTarget) and target.knobs() == {"trigger_tokens": 1500, "keep_messages": 4}
    assert config.run.agent == config.optimize.screen_agent == "reference"
    assert config.optimize.report.final_llm_limit == 0
    assert config.endpoints.compressor.is_local and config.endpoints.compressor.model == "qwen2.5-coder-0.5b"
    assert config.endpoints.optimizer.is_local and config.endpoints.optimizer.model == "qwen2.5-coder-1.5b"


def test_trigger_choices_are_not_a_knob_and_a_chosen_trigger_replaces_the_asked_one(tmp_path):
    body = (
        "[optimize.target]\ntype = 'langchain'\ntrigger_tokens = 2000\nkeep_messages = 4\ntrigger_choices = [3000]\n"
        "max_peak_tokens = 3200\n"
    )
    target = _load(tmp_path, body).optimize.target
    assert target.trigger_choices == (3000,) and target.max_peak_tokens == 3200
    assert target.knobs() == {"trigger_tokens": 2000, "keep_messages": 4}
    chosen = target.at_trigger(3000)
    assert chosen.knobs() == {"trigger_tokens": 3000, "keep_messages": 4} and chosen.trigger_choices == ()
    assert chosen.max_peak_tokens is None
    assert chosen.strategy("Keep ids.").trigger() == 3000


def test_paraphrases_are_how_the_search_runs_not_a_knob(tmp_path):
    body = "[optimize.target]\ntype = 'langchain'\ntrigger_tokens = 2000\nkeep_messages = 4\nparaphrases = 2\n"
    target = _load(tmp_path, body).optimize.target
    assert target.paraphrases == 2 and target.knobs() == {"trigger_tokens": 2000, "keep_messages": 4}


def test_sections_are_how_the_search_runs_not_a_knob_and_off_unless_asked(tmp_path):
    body = "[optimize.target]\ntype = 'langchain'\ntrigger_tokens = 2000\nkeep_messages = 4\n"
    assert _load(tmp_path, body).optimize.target.sections is False
    target = _load(tmp_path, body + "sections = true\n").optimize.target
    assert target.sections is True and target.knobs() == {"trigger_tokens": 2000, "keep_messages": 4}


def test_default_triggers_are_not_a_knob_and_are_spent_once_the_trigger_is_set(tmp_path):
    body = "[optimize.target]\ntype = 'anthropic'\ntrigger_tokens = 2000\ndefault_triggers = [2400, 2800]\n"
    target = _load(tmp_path, body).optimize.target
    assert target.default_triggers == (2400, 2800) and target.knobs() == {"trigger_tokens": 2000}
    assert target.at_trigger(2400).default_triggers == ()  # a `default@T` row runs once, not again from it


def test_a_target_without_a_trigger_cannot_be_given_choices():
    from optimizer.summary.targets import TargetConfig

    class Fixed(TargetConfig):  # a plugin's summarizer with no trigger setting
        type: str = "fixed"

        def strategy(self, instructions):
            raise NotImplementedError

        def default(self):
            raise NotImplementedError

    assert Fixed().trigger_choices == ()
    with pytest.raises(ValueError, match="the fixed target has no trigger_tokens to choose"):
        Fixed(trigger_choices=(1000,))
    with pytest.raises(ValueError, match="default_triggers: the fixed target has no trigger_tokens"):
        Fixed(default_triggers=(1000,))


def test_the_peak_goal_may_be_the_default_texts_own_and_nothing_else_but_a_token_count(tmp_path):
    head = "[optimize.target]\ntype = 'langchain'\ntrigger_tokens = 2000\nkeep_messages = 4\ntrigger_choices = [1800]\n"
    target = _load(tmp_path, head + "max_peak_tokens = 'default'\n").optimize.target
    assert target.max_peak_tokens == "default" and target.at_trigger(1800).max_peak_tokens is None
    with pytest.raises(ConfigError, match="max_peak_tokens") as refused:
        _load(tmp_path, head + "max_peak_tokens = 'lowest'\n")
    assert "max_peak_tokens': a positive token count or \"default\" (got 'lowest')" in str(refused.value)
    assert "constrained-int" not in str(refused.value)


def test_screen_samples_are_how_the_search_runs_not_a_knob(tmp_path):
    body = (
        "[optimize.target]\ntype = 'langchain'\ntrigger_tokens = 2000\nkeep_messages = 4\nscreen_samples = 3\n"
        "[endpoints.compressor]\ntemperature = 0.7\n"
    )
    target = _load(tmp_path, body).optimize.target
    assert target.screen_samples == 3 and target.knobs() == {"trigger_tokens": 2000, "keep_messages": 4}
    with pytest.raises(ConfigError, match="screen_samples above 1 needs"):
        _load(tmp_path, body.replace("temperature = 0.7", "temperature = 0.0"))
