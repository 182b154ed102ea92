"""``num_envs`` copies of a non-vectorized env in one process (TorchRL's ``SerialEnv``): on a 2-core
machine worker processes cost more than they save for the small MPE-sized envs (the mpe backend's
module docstring gives the measurement)."""

from __future__ import annotations

from collections.abc import Callable

from torchrl.envs import EnvBase, SerialEnv


def serial_copies(
    make_one: Callable[[], EnvBase], *, num_envs: int, seed: int | None, device: str
) -> EnvBase:
    """``make_one()`` itself for one copy, else ``num_envs`` copies in a started ``SerialEnv`` with
    the first copy's ``group_map``; seeded when ``seed`` is given.

    Examples:
        >>> from mpe2 import simple_spread_v3
        >>> from torchrl.envs import PettingZooWrapper
        >>> def make_one():
        ...     return PettingZooWrapper(simple_spread_v3.parallel_env(), categorical_actions=True)
        >>> env = serial_copies(make_one, num_envs=2, seed=0, device="cpu")
        >>> env.batch_size, list(env.group_map)
        (torch.Size([2]), ['agent'])
    """
    env: EnvBase
    if num_envs == 1:
        env = make_one()
    else:
        env = SerialEnv(num_envs, make_one, device=device)
        env.start()
        # SerialEnv forwards attributes as one value per copy; consumers expect one dict.
        env.group_map = dict(env._envs[0].group_map)
    if seed is not None:
        env.set_seed(seed)
    return env
