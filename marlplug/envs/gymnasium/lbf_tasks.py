"""Level-Based Foraging on the ``gymnasium`` backend (extra ``lbf``), named by its Gymnasium ids;
each player's valid actions are its group's ``action_mask``."""

from __future__ import annotations

from marlplug.envs.gymnasium.adapter import lbf_action_mask
from marlplug.envs.gymnasium.task import GymnasiumTask, gymnasium_scenario

LBF_8X8_2P_2F_COOP = GymnasiumTask(
    name="Foraging-8x8-2p-2f-coop-v3",
    package="lbforaging",
    suite="lbf",
    summary="2 players must load 2 foods together on an 8x8 grid (valid-action masks)",
    extra="lbf",
    max_steps_option="max_episode_steps",
    read_action_mask=lbf_action_mask,
)
LBF_10X10_3P_3F = GymnasiumTask(
    name="Foraging-10x10-3p-3f-v3",
    package="lbforaging",
    suite="lbf",
    summary="3 players load 3 foods on a 10x10 grid (valid-action masks)",
    extra="lbf",
    max_steps_option="max_episode_steps",
    read_action_mask=lbf_action_mask,
)
Foraging8x82p2fCoop = gymnasium_scenario(LBF_8X8_2P_2F_COOP)
Foraging10x103p3f = gymnasium_scenario(LBF_10X10_3P_3F)
