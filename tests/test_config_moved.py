"""The PPO loss terms are ``algorithm`` options; the old ``clip_ppo`` entry of ``losses:`` still loads.

One declaration (:class:`marlplug.losses.PPOLossOptions`) feeds the algorithm's options, the
deprecated entry, the joint trainer's settings and the loss the trainer builds.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

import pytest

from marlplug.config import load_config, resolved_dict
from marlplug.config.checks import ConfigWarning
from marlplug.errors import ConfigError
from marlplug.losses import MARLPLUG_DEFAULTS, JointPPOLoss, PPOLossOptions
from marlplug.train.run import build_trainer
from tests.train.helpers import SMALL_RUN

OLD = {"losses": [{"name": "clip_ppo", "vf_coef": 1.0, "ent_coef": 0.0}, "redundancy"]}
NEW = {"algorithm": {"name": "ppo", "vf_coef": 1.0, "ent_coef": 0.0}, "losses": ["redundancy"]}


def _load_quietly(data: dict[str, Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return load_config(data=data)


def test_the_old_entry_loads_as_the_new_spelling_with_one_warning() -> None:
    with pytest.warns(ConfigWarning) as caught:
        old = load_config(data=OLD)
    assert [str(w.message) for w in caught] == [
        "losses[0]: 'clip_ppo' is deprecated (removed in marlplug 0.3.0); its settings are "
        "algorithm options now (algorithm: {name: ppo, clip_range: ..., vf_coef: ...}); remove it "
        "from losses"
    ]
    new = _load_quietly(NEW)
    assert resolved_dict(old) == resolved_dict(new)
    assert [spec.name for spec in old.losses] == ["redundancy"]
    assert old.algorithm.options.vf_coef == 1.0


def test_a_resolved_config_reloads_without_warnings() -> None:
    with pytest.warns(ConfigWarning, match="'clip_ppo' is deprecated"):
        resolved = resolved_dict(load_config(data={"losses": ["clip_ppo"]}))
    assert "clip_ppo" not in str(resolved["losses"])
    assert resolved_dict(_load_quietly(resolved)) == resolved


def test_errors_name_the_entry_where_the_file_has_it() -> None:
    with pytest.raises(ConfigError, match=r"^losses\[1\]\.coef: expected a number, got 'high'$"):
        load_config(data={"losses": ["clip_ppo", {"name": "redundancy", "coef": "high"}]})
    with pytest.raises(ConfigError, match=r"^losses\[0\]\.clip_range: input should be less than"):
        load_config(data={"losses": [{"name": "clip_ppo", "clip_range": 3}]})


def test_a_setting_given_in_both_places_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"^losses\[0\]\.vf_coef: also set as algorithm\.vf_coef"):
        load_config(
            data={
                "algorithm": {"name": "ppo", "vf_coef": 2.0},
                "losses": [{"name": "clip_ppo", "vf_coef": 1.0}],
            }
        )


def test_the_setting_reaches_the_loss_the_trainer_builds() -> None:
    """Both spellings give the trainer, and its JointPPOLoss, the configured terms."""
    losses: list[JointPPOLoss] = []
    for data in (OLD, NEW):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConfigWarning)
            config = load_config(overrides=SMALL_RUN, data=copy.deepcopy(data))
        trainer = build_trainer(config)
        try:
            assert trainer.config.vf_coef == 1.0 and trainer.config.ent_coef == 0.0
            losses.append(trainer.loss)
        finally:
            trainer.close()
    for loss in losses:
        assert (loss.critic_coeff, loss.entropy_coeff, loss.clip_epsilon) == (1.0, 0.0, 0.2)
        assert list(loss.aux_losses) == ["redundancy"]


def test_marlplug_defaults_are_the_declared_ones() -> None:
    declared = PPOLossOptions()
    assert MARLPLUG_DEFAULTS["clip_epsilon"] == declared.clip_range
    assert MARLPLUG_DEFAULTS["critic_coeff"] == declared.vf_coef
    assert MARLPLUG_DEFAULTS["entropy_coeff"] == declared.ent_coef
    assert MARLPLUG_DEFAULTS["clip_value"] == declared.clip_range_vf
    assert MARLPLUG_DEFAULTS["normalize_advantage"] is declared.normalize_advantages
    assert MARLPLUG_DEFAULTS["loss_critic_type"] == declared.loss_critic_type
