"""``marlplug render CONFIG [--checkpoint PATH] --out episode.gif``: one episode of the config's env as a GIF.

Rendered with the mpe backend; actions come from a trained policy's checkpoint (greedy by default,
sampled with ``--sample``) or are random.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import imageio.v2 as imageio
from tensordict import TensorDictBase
from torchrl.envs import EnvBase
from torchrl.envs.utils import ExplorationType, set_exploration_type

from marlplug.config import (
    MarlplugConfig,
    apply_override,
    read_config_file,
    validate_options,
    with_run_defaults,
)
from marlplug.envs import get_scenario, make_env, rollout_frames
from marlplug.envs.render import Policy
from marlplug.errors import UserError


@click.command()
@click.argument("config_path", metavar="CONFIG", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--checkpoint",
    type=click.Path(path_type=Path),
    default=None,
    help="Policy checkpoint to act with; random actions when omitted.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("episode.gif"),
    show_default=True,
    help="GIF file to write.",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a config value, e.g. --set env.agents=8 (repeatable).",
)
@click.option(
    "--fps",
    default=10,
    show_default=True,
    type=click.IntRange(1, 100),
    help="Frames per second of the GIF.",
)
@click.option(
    "--sample",
    is_flag=True,
    help="With --checkpoint: sample actions from the policy instead of taking the most likely.",
)
def render(
    config_path: Path,
    checkpoint: Path | None,
    out: Path,
    overrides: tuple[str, ...],
    fps: int,
    sample: bool,
) -> None:
    """Write a GIF of one episode of CONFIG's environment (rendered with the mpe backend)."""
    raw = read_config_file(config_path)
    for assignment in overrides:
        apply_override(raw, assignment)
    config = validate_options(MarlplugConfig, raw)
    assert isinstance(config, MarlplugConfig)
    if config.env.backend != "mpe":
        click.echo(
            f"rendering '{config.env.name}' with the mpe backend (same scenario definition "
            f"as '{config.env.backend}')",
            err=True,
        )
    # The options a run of this config trains with (its run defaults too: nearest first).
    scenario = get_scenario(config.env.name, backend="mpe")
    options = with_run_defaults(scenario.Options, config.env.raw_options)
    env = make_env(config.env.name, backend="mpe", seed=config.seed, **options)
    policy: Policy | None = None
    actions = "random actions"
    if checkpoint is not None:
        from marlplug.config import validate_components
        from marlplug.runs.checkpoint import load_policy

        trained = load_policy(checkpoint, env, validate_components(config))
        exploration = ExplorationType.RANDOM if sample else ExplorationType.DETERMINISTIC
        actions = f"{'sampled' if sample else 'greedy'} actions of {checkpoint}"

        def act(tensordict: TensorDictBase) -> TensorDictBase:
            with set_exploration_type(exploration):
                return trained(tensordict)

        policy = act

    check_writable(out, option="--out")
    count = save_gif(env, out, policy=policy, fps=fps)
    click.echo(f"wrote {out} ({count} frames, {actions})")


def check_writable(out: Path, *, option: str) -> None:
    """Fail before an episode is played when ``out`` cannot be written (imageio's writer would
    also print a traceback); one line naming ``option``."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.open("ab").close()
    except OSError as exc:
        raise UserError(f"{option}: cannot write {out} ({exc.strerror or exc})") from None


def save_gif(env: EnvBase, out: Path, *, policy: Policy | None, fps: int = 10) -> int:
    """Play one episode of ``env`` with ``policy`` (random when ``None``), write it to ``out`` as
    a looping GIF and return its number of frames (also used by ``marlplug evaluate --gif``)."""
    frames = rollout_frames(env, policy=policy)
    imageio.mimsave(out, list[Any](frames), duration=1000 / fps, loop=0)
    return len(frames)
