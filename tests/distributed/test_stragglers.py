"""Straggler models: the paper's fixed count, the per-learner random model, seeding, bad input."""

from __future__ import annotations

import pytest

from marlplug.coding.stragglers import StragglerModel
from marlplug.config import StragglerSection
from marlplug.errors import ConfigError


def test_fixed_model_delays_exactly_k_active_learners_each_round() -> None:
    model = StragglerModel(model="fixed", count=3, delay_s=0.5, seed=1)
    seen = set()
    for _ in range(50):
        delays = model.delays([0, 2, 4, 6, 8])
        late = {j for j, d in delays.items() if d > 0}
        assert len(late) == 3 and late <= {0, 2, 4, 6, 8}
        assert all(delays[j] == 0.5 for j in late)
        seen |= late
    assert seen == {0, 2, 4, 6, 8}  # random learners, not always the same ones


def test_random_model_straggles_with_the_given_probability() -> None:
    model = StragglerModel(model="random", probability=0.3, delay_s=1.0, seed=0)
    late = sum(sum(d > 0 for d in model.delays(range(10)).values()) for _ in range(400))
    assert 0.25 < late / 4000 < 0.35


def test_same_seed_same_stragglers_and_config_round_trip() -> None:
    section = StragglerSection(model="fixed", count=2, delay_s=0.25)
    first = StragglerModel.from_config(section, seed=7)
    second = StragglerModel.from_config(section, seed=7)
    assert [first.delays(range(15)) for _ in range(5)] == [
        second.delays(range(15)) for _ in range(5)
    ]


def test_unknown_model_names_the_field_and_the_choices() -> None:
    with pytest.raises(ConfigError, match=r"coding.stragglers.model.*fixed, random"):
        StragglerModel(model="sometimes")
