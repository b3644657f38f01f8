"""`[optimize]` and its sections: the shared budget, selection and report settings apart, and one section per
registered search (`[optimize.acon]`, `[optimize.gepa]`), each its search's own settings."""

from __future__ import annotations

import pytest

from optimizer.config import MOVED, OptimizeConfig, load_experiment
from optimizer.errors import ConfigError
from optimizer.search.searches import SEARCHES, AconSearch, GepaSearch
from optimizer.search.searches.base import Search
from tests.conftest import ROOT

HEAD = 'name = "t"\n[suite]\ntype = "builtin"\n'


def load(tmp_path, body: str):
    path = tmp_path / "t.toml"
    path.write_text(HEAD + body)
    return load_experiment(path)


def refused(tmp_path, body: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, body)
    text = str(caught.value)
    assert "\n" not in text and text.startswith(str(tmp_path / "t.toml")), text
    return text


def test_every_registered_search_has_a_section_of_its_name_and_the_chosen_one_runs(tmp_path):
    assert SEARCHES.names() == ("acon", "gepa")
    assert {"acon", "gepa"} <= set(OptimizeConfig.model_fields)
    config = load(tmp_path, '[optimize]\nsearch = "gepa"\n[optimize.gepa]\nmetric_calls = 12\n')
    chosen = config.optimize.chosen_search()
    assert isinstance(chosen, GepaSearch) and chosen.metric_calls == 12 and chosen.uses_optimizer
    default = OptimizeConfig().chosen_search()
    assert isinstance(default, AconSearch) and isinstance(default, Search)
    assert not AconSearch(llm_proposers=False).uses_optimizer


def test_the_sections_round_trip_through_a_dump_and_an_override(tmp_path):
    config = load(tmp_path, "[optimize.acon]\nparents = 3\nllm_proposers = false\n[optimize.budget]\nrounds = 5\n")
    assert type(config).model_validate(config.model_dump()) == config
    # A table merges into the table it overrides: the other keys of `[optimize.acon]` stay.
    changed = config.with_overrides(optimize={"acon": {"parents": 1}})
    acon = changed.optimize.chosen_search()
    assert isinstance(acon, AconSearch) and (acon.parents, acon.llm_proposers) == (1, False)
    assert changed.optimize.budget.rounds == 5
    assert changed.optimize.changed() == ["budget.rounds", "acon.llm_proposers", "acon.parents"]


@pytest.mark.parametrize("key", sorted(MOVED))
def test_a_flat_key_that_moved_is_one_line_naming_its_new_place(tmp_path, key):
    section, name = MOVED[key]
    text = refused(tmp_path, f"[optimize]\n{key} = 1\n")
    renamed = "" if name == key else f" as '{name}'"
    assert text.endswith(f"'optimize': '{key}' moved to [optimize.{section}]{renamed}"), text


def test_the_shipped_configs_use_the_sections():
    for path in sorted((ROOT / "experiments").glob("*.toml")):
        load_experiment(path)  # a flat key left behind would be refused


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('[optimize]\nsearch = "gepaa"\n', "'optimize.search': unknown search 'gepaa'; known: acon, gepa"),
        ("[optimize.gepa]\nmetric_calls = 5\n", "'optimize': 'gepa.metric_calls' has no effect with search = 'acon'"),
        ('[optimize]\nsearch = "gepa"\n[optimize.acon]\nparents = 3\n', "'acon.parents' has no effect with search"),
        ("[optimize.acon]\nmetric_calls = 5\n", "unknown key 'optimize.acon.metric_calls'"),
        ("[optimize.acon]\nparents = 0\n", "'optimize.acon.parents'"),
        ("[optimize.budget]\nparents = 2\n", "unknown key 'optimize.budget.parents'"),
        ("[optimize.acon]\nproposers = [{ type = 'patchh' }]\n", "'optimize.acon.proposers.0'"),
        (
            "[optimize.budget]\nmax_agent_episodes = 10\n[optimize.selection]\nconfirm_top = 2\ntier1_repeats = 2\n",
            "max_agent_episodes = 10 cannot pay for the tier-1 confirmation (24 episodes",
        ),
    ],
)
def test_a_bad_section_is_one_line(tmp_path, body, message):
    assert message in refused(tmp_path, body)
