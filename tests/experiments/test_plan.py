"""Planning a sweep: seeds, grid values, configurations; bad input fails before anything runs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from marlplug.errors import ConfigError, UserError
from marlplug.experiments.plan import GridAxis, parse_seeds, plan_runs, split_values


@given(st.lists(st.integers(0, 50), min_size=1, max_size=8))
def test_seed_lists_round_trip(seeds: list[int]) -> None:
    assert parse_seeds(",".join(map(str, seeds))) == list(dict.fromkeys(seeds))


@pytest.mark.parametrize("text", ["", "a", "3-1", "1,,2", "-1", "0-2-4", "1.5"])
def test_bad_seed_lists_name_the_option(text: str) -> None:
    with pytest.raises(UserError, match=r"^--seeds: .* is not a seed list; write e\.g\. 0-4"):
        parse_seeds(text)


@given(st.lists(st.sampled_from(["1", "[]", "[1, 2]", "{a: 1, b: [2, 3]}", "'x,y'"]), min_size=1))
def test_grid_values_split_only_on_top_level_commas(values: list[str]) -> None:
    assert split_values(",".join(values)) == values


def test_grid_is_the_product_of_its_axes_in_order() -> None:
    runs = plan_runs(
        None,
        name="default",
        seeds=[3],
        overrides=["train.updates=2"],
        grid=[GridAxis.parse("train.lr=1e-3,3e-3"), GridAxis.parse("train.n_epochs=2,4")],
    )
    assert [(r.config.train.lr, r.config.train.n_epochs) for r in runs] == [
        (1e-3, 2),
        (1e-3, 4),
        (3e-3, 2),
        (3e-3, 4),
    ]
    assert {r.config.seed for r in runs} == {3}
    assert {r.config.train.updates for r in runs} == {2}
    assert runs[1].overrides() == [
        "train.updates=2",
        "train.lr=1e-3",
        "train.n_epochs=4",
        "seed=3",
    ]


def test_a_bad_grid_value_fails_before_any_run_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"^train\.n_epochs: "):
        plan_runs(None, name="d", seeds=[0], grid=[GridAxis.parse("train.n_epochs=2,many")])


def test_a_key_twice_in_the_grid_is_refused() -> None:
    axis = GridAxis.parse("train.lr=1,2")
    with pytest.raises(UserError, match="a key is given twice"):
        plan_runs(None, name="d", seeds=[0], grid=[axis, axis])


def test_list_valued_grid_compares_with_and_without_a_loss() -> None:
    runs = plan_runs(
        None, name="d", seeds=[0], grid=[GridAxis.parse("losses=[],[{name: redundancy}]")]
    )
    assert [[loss.name for loss in r.config.losses] for r in runs] == [[], ["redundancy"]]
    assert runs[1].configuration.folder == "losses=_name_redundancy"


def test_runs_at_once_wanting_more_threads_than_cores_get_a_note(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from marlplug.cli.sweep import _oversubscription_note

    monkeypatch.setattr("os.cpu_count", lambda: 2)
    two_threads = plan_runs(
        None, name="d", seeds=[0, 1], overrides=["train.torch_threads=2"], grid=[]
    )
    note = _oversubscription_note(two_threads, jobs=2)
    assert note is not None and "--set train.torch_threads=auto" in note and "2 cores" in note
    assert _oversubscription_note(two_threads, jobs=1) is None
    assert _oversubscription_note(two_threads[:1], jobs=2) is None  # one run: nothing beside it
    one_thread = plan_runs(
        None, name="d", seeds=[0, 1], overrides=["train.torch_threads=1"], grid=[]
    )
    assert _oversubscription_note(one_thread, jobs=2) is None
    auto = plan_runs(None, name="d", seeds=[0, 1], overrides=["train.torch_threads=auto"], grid=[])
    assert _oversubscription_note(auto, jobs=2) is None
