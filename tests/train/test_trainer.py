"""The joint trainer: Rust defaults, determinism, bit-identical resume, and `marlplug train` end to end."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from marlplug.config import load_config
from marlplug.envs import make_env
from marlplug.errors import UserError
from marlplug.losses.ppo_options import JointTrainerConfig
from marlplug.runs.checkpoint import CHECKPOINT_NAME, load_checkpoint
from marlplug.train.run import build_trainer, run_training
from marlplug.train.trainer import JointMultiAgentTrainer, episode_returns

SMALL = [
    "env.agents=2",
    "train.rollout_steps=50",
    "train.minibatch_size=25",
    "train.n_epochs=2",
    "train.iterate_all_minibatches=true",
    "algorithm.hidden_size=16",
    "algorithm.feature_dim=8",
    "logging.progress=false",
]


def test_defaults_are_the_rust_reference_field_for_field() -> None:
    defaults = {name: f.default for name, f in JointTrainerConfig.model_fields.items()}
    assert (
        defaults
        | {
            "rollout_steps": 2048,
            "gamma": 0.99,
            "gae_lambda": 0.95,
            "clip_range": 0.2,
            "clip_range_vf": 0.2,
            "vf_coef": 0.5,
            "ent_coef": 0.01,
            "n_epochs": 4,
            "minibatch_size": 256,
            "max_grad_norm": 0.5,
            "normalize_advantages": True,
            "iterate_all_minibatches": False,
            "max_minibatches_per_epoch": None,
        }
        == defaults
    )


def _params_after(updates: int, seed: int) -> list[torch.Tensor]:
    config = load_config(
        data={"seed": seed, "losses": [{"name": "clip_ppo"}, {"name": "redundancy"}]},
        overrides=SMALL,
    )
    trainer = build_trainer(config)
    for _ in range(updates):
        trainer.train_update()
    trainer.close()
    return [p.detach().clone() for p in trainer.loss.parameters()]


def test_same_seed_gives_bit_identical_parameters_after_three_updates() -> None:
    first, second = _params_after(3, seed=5), _params_after(3, seed=5)
    assert all(torch.equal(a, b) for a, b in zip(first, second, strict=True))
    other = _params_after(3, seed=6)
    assert not all(torch.equal(a, b) for a, b in zip(first, other, strict=True))


def test_stats_hold_every_per_agent_and_shared_number() -> None:
    env = make_env("cooperative_navigation", agents=2, seed=0)
    trainer = JointMultiAgentTrainer(
        env,
        config=JointTrainerConfig(
            rollout_steps=50,
            minibatch_size=20,
            n_epochs=2,
            iterate_all_minibatches=True,
            max_minibatches_per_epoch=2,
        ),
    )
    stats = trainer.train_update()
    trainer.close()
    assert stats.minibatch_steps == 4
    for name in (
        "policy_loss",
        "value_loss",
        "entropy",
        "clip_fraction",
        "approx_kl",
        "explained_var",
        "grad_norm",
    ):
        assert len(stats.per_agent[name]) == 2
    assert stats.mean_return is not None and stats.frames == 50
    assert stats.skipped_nonfinite == 0


def test_episode_returns_split_at_done() -> None:
    from tensordict import TensorDict

    rewards = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0]).reshape(5, 1, 1).expand(5, 2, 1)
    done = torch.tensor([False, True, False, False, True]).reshape(5, 1)
    rollout = TensorDict(
        {("next", "agent", "reward"): rewards, ("next", "done"): done}, batch_size=[5]
    )
    assert episode_returns(rollout, ["agent"]).tolist() == [3.0, 12.0]


def test_resume_continues_bit_identically(tmp_path: Path) -> None:
    overrides = [*SMALL, f"logging.dir={tmp_path}", "train.checkpoint_every=2", "train.updates=4"]
    straight = run_training(load_config(overrides=[*overrides, "logging.run_name=straight"]))
    stopped = run_training(
        load_config(overrides=[*overrides, "logging.run_name=stopped"]), updates=2
    )
    assert load_checkpoint(stopped.checkpoint)["training"]["counters"]["iterations"] == 2
    config = load_config(stopped.run_dir / "config.yaml")
    resumed = run_training(config, resume_dir=stopped.run_dir)
    a = load_checkpoint(straight.checkpoint)["training"]
    b = load_checkpoint(resumed.checkpoint)["training"]
    assert a["counters"] == b["counters"] and a["counters"]["iterations"] == 4
    for key in ("theta", "opt_state"):
        assert torch.equal(a[key], b[key]), key
    assert torch.equal(straight.theta, resumed.theta)
    assert straight.history == resumed.history
    assert (
        straight.learning_curve.is_file()
        and (straight.metrics_dir / "scalars" / "return_per_agent.csv").is_file()
    )
    assert not list(tmp_path.glob("*/.checkpoint-*"))  # no temp files left behind


def test_cli_train_end_to_end(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    args = [
        f"--set={o}"
        for o in [*SMALL, f"logging.dir={tmp_path}", "logging.run_name=cli", "train.updates=2"]
    ]
    result = run_cli("train", *args)
    assert result.exit_code == 0, result.err
    assert "learning curve" in result.out and "return per agent" in result.out
    assert (tmp_path / "cli" / CHECKPOINT_NAME).is_file()
    result = run_cli(
        "train", "--resume", str(tmp_path / "cli"), "--set", "train.updates=3", "--no-progress"
    )
    assert result.exit_code == 0, result.err
    counters = load_checkpoint(tmp_path / "cli" / CHECKPOINT_NAME)["training"]["counters"]
    assert counters["iterations"] == 3


def test_cli_user_errors(tmp_path: Path, run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli("train", "--resume", str(tmp_path / "nothing"))
    assert result.exit_code == 2 and "nothing does not exist" in result.err
    result = run_cli(
        "train", "--set", "losses=[{name: redundancyy}]", "--set", f"logging.dir={tmp_path}"
    )
    assert result.exit_code == 2 and "losses[0].name: unknown loss 'redundancyy'" in result.err


def test_coding_section_without_a_runner_is_a_user_error() -> None:
    import marlplug.distributed as distributed

    if hasattr(distributed, "run_coded_training"):
        pytest.skip("the coded runtime is installed")
    config = load_config(data={"coding": {"scheme": "uncoded", "learners": 3}}, overrides=SMALL)
    with pytest.raises(UserError, match="coding"):
        build_trainer(config)
