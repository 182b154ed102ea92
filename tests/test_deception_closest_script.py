"""scripts/deception_closest.py, quoted in docs/distributed.md: more good agents acting at random
leave the closest of them nearer the target."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "deception_closest.py"


def test_seven_random_good_agents_are_closer_to_the_target_than_two() -> None:
    spec = importlib.util.spec_from_file_location("deception_closest", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    two = module.closest_to_target(3, episodes=3)
    seven = module.closest_to_target(8, episodes=3)
    assert 0 < seven < two < 2 * 2**0.5  # inside the arena's diagonal
