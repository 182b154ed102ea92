"""``marlplug render CONFIG --out episode.gif``: one episode of the config's env as a GIF (mpe backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import imageio.v2 as imageio

from marlplug.config import MarlplugConfig, apply_override, read_config_file, validate_options
from marlplug.envs import make_env, rollout_frames
from marlplug.errors import UserError


@click.command()
@click.argument("config_path", metavar="CONFIG", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--checkpoint", type=click.Path(path_type=Path), default=None,
              help="Policy checkpoint to act with; random actions when omitted.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=Path("episode.gif"),
              show_default=True, help="GIF file to write.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a config value, e.g. --set env.agents=8 (repeatable).")
@click.option("--fps", default=10, show_default=True, help="Frames per second of the GIF.")
def render(
    config_path: Path, checkpoint: Path | None, out: Path, overrides: tuple[str, ...], fps: int
) -> None:
    """Write a GIF of one episode of CONFIG's environment (rendered with the mpe backend)."""
    raw = read_config_file(config_path)
    for assignment in overrides:
        apply_override(raw, assignment)
    config = validate_options(MarlplugConfig, raw)
    assert isinstance(config, MarlplugConfig)
    if checkpoint is not None:
        # The trainer's checkpoint format is not part of this install yet; refuse rather than
        # silently render random actions under a checkpoint's name.
        raise UserError(f"--checkpoint {checkpoint}: loading policies from checkpoints is not "
                        "supported yet; omit --checkpoint to render random actions")
    if config.env.backend != "mpe":
        click.echo(f"rendering '{config.env.name}' with the mpe backend (same scenario definition "
                   f"as '{config.env.backend}')", err=True)
    env = make_env(config.env.name, backend="mpe", seed=config.seed, **config.env.raw_options)
    frames = rollout_frames(env)
    out.parent.mkdir(parents=True, exist_ok=True)
    imageio.mimsave(out, list[Any](frames), duration=1000 / fps, loop=0)
    click.echo(f"wrote {out} ({len(frames)} frames, random actions)")
