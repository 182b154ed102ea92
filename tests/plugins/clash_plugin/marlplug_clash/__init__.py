"""A plugin that reuses built-in names (``mds``, ``redundancy``, ``mpe/cooperative_navigation``)
next to one name of its own (``clash_penalty``)."""

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

import marlplug
from marlplug.envs.mpe import CooperativeNavigation


class ClashPenalty(nn.Module):
    """An aux loss under a name nobody else uses: it must stay available."""

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        return sum(f.pow(2).mean() for f in features) * 0.0


class Mds:
    """Not marlplug's ``mds``: registering it would shadow the built-in."""


@marlplug.hookimpl
def marlplug_codes() -> Mapping[str, Any]:
    return {"mds": Mds}


@marlplug.hookimpl
def marlplug_losses() -> Mapping[str, Any]:
    return {"redundancy": ClashPenalty, "clash_penalty": ClashPenalty}


@marlplug.hookimpl
def marlplug_envs() -> Mapping[str, Any]:
    return {"mpe/cooperative_navigation": CooperativeNavigation}
