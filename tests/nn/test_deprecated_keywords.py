"""``centralized_critic``, the spelling of ``critic`` before 0.1.0, keeps working until 0.3.0 with a
``DeprecationWarning`` that names the new keyword and points at the caller's line (CHANGELOG.md,
"Deprecation policy")."""

from __future__ import annotations

import pytest
import torch

from marlplug import JointActorCritic, make_env
from marlplug.algorithms.ppo import PPO
from marlplug.nn import GroupActorCritic, GroupSpec

SPECS = [GroupSpec(group="agent", agent_names=("a", "b"), observation_dim=4, n_actions=3)]
NEW_NAME = "use critic='joint' (True) or critic='local' (False)"


def _weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: tensor.clone() for name, tensor in model.state_dict().items()}


@pytest.mark.parametrize(("centralized", "critic"), [(True, "joint"), (False, "local")])
def test_joint_actor_critic_builds_what_critic_builds(centralized: bool, critic: str) -> None:
    torch.manual_seed(0)
    expected = _weights(JointActorCritic(SPECS, hidden_size=8, feature_dim=8, critic=critic))
    torch.manual_seed(0)
    with pytest.warns(DeprecationWarning, match=r"centralized_critic=\.\.\.\) is deprecated") as w:
        model = JointActorCritic(
            SPECS, hidden_size=8, feature_dim=8, centralized_critic=centralized
        )
    assert NEW_NAME in str(w[0].message) and "0.3.0" in str(w[0].message)
    assert w[0].filename == __file__  # blamed on the caller, not on marlplug
    got = _weights(model)
    assert got.keys() == expected.keys()
    assert all(torch.equal(got[name], expected[name]) for name in got)


def test_from_env_group_networks_and_ppo_take_it_too() -> None:
    env = make_env("cooperative_navigation", agents=2, seed=0)
    torch.manual_seed(0)
    expected = _weights(
        JointActorCritic.from_env(env, hidden_size=8, feature_dim=8, critic="local")
    )
    torch.manual_seed(0)
    with pytest.warns(DeprecationWarning, match=r"JointActorCritic\.from_env\(centralized") as w:
        model = JointActorCritic.from_env(
            env, hidden_size=8, feature_dim=8, centralized_critic=False
        )
    assert w[0].filename == __file__
    got = _weights(model)
    assert all(torch.equal(got[name], expected[name]) for name in expected)
    torch.manual_seed(0)
    joint = _weights(GroupActorCritic(SPECS[0], hidden_size=8, feature_dim=8, critic="joint"))
    torch.manual_seed(0)
    with pytest.warns(DeprecationWarning, match=r"GroupActorCritic\(centralized_critic"):
        group = GroupActorCritic(SPECS[0], hidden_size=8, feature_dim=8, centralized_critic=True)
    assert all(torch.equal(tensor, joint[name]) for name, tensor in _weights(group).items())
    with pytest.warns(DeprecationWarning, match=r"PPO\(centralized_critic"):
        assert PPO(centralized_critic=False).critic == "local"
    env.close()


def test_without_it_nothing_warns() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        JointActorCritic(SPECS, hidden_size=8, feature_dim=8, critic="local")
        PPO(critic="state")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"centralized_critic": True, "critic": "state"}, "give critic alone"),
        ({"centralized_critic": "yes"}, "centralized_critic must be True or False"),
    ],
)
def test_a_contradiction_is_a_type_error(kwargs: dict[str, object], message: str) -> None:
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match=message):
        JointActorCritic(SPECS, hidden_size=8, feature_dim=8, **kwargs)  # type: ignore[arg-type]
