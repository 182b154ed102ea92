"""The multi-robot warehouse RWARE on the ``gymnasium`` backend (extra ``rware``), named by its
Gymnasium ids (RWARE gives no action masks)."""

from __future__ import annotations

from marlplug.envs.gymnasium.task import GymnasiumTask, gymnasium_scenario

RWARE_TINY_2AG = GymnasiumTask(
    name="rware-tiny-2ag-v2",
    package="rware",
    suite="rware",
    summary="2 robots deliver requested shelves in a tiny warehouse",
    extra="rware",
    max_steps_option="max_steps",
)
RWARE_TINY_4AG = GymnasiumTask(
    name="rware-tiny-4ag-v2",
    package="rware",
    suite="rware",
    summary="4 robots deliver requested shelves in a tiny warehouse",
    extra="rware",
    max_steps_option="max_steps",
)
RwareTiny2ag = gymnasium_scenario(RWARE_TINY_2AG)
RwareTiny4ag = gymnasium_scenario(RWARE_TINY_4AG)
