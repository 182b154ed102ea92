"""``env.copies: ray``: each copy of a non-vectorized env steps in a Ray actor, on whatever node Ray
places it, for simulations that outgrow one machine; the copies are batched as ``SerialEnv`` batches
them, so the rest of marlplug sees the same env.

TorchRL 0.14 has no Ray-backed batched env (its ``RayCollector`` runs whole collectors, policy
included, while marlplug drives ``env.step`` itself), so :class:`RayCopies` is TorchRL's
``SerialEnv`` over one small proxy env per actor: SerialEnv's own code seeds the copies (copy k
with the seed copy k - 1 returns), resets them and stacks their outputs, so the transitions are
the serial ones bit for bit. A step sends every copy its action before it waits for any answer,
so the copies step at the same time; a reset asks them one after the other.

Ray is joined at ``RAY_ADDRESS`` when that is set (a cluster started as docs/cluster.md says), is
reused when this process already runs one, and is otherwise started here (loopback only) and shut
down when the last env that started it closes. Closing the env kills its actors; so does the end
of this process (Ray's actors end with their driver).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tensordict import TensorDictBase
from torchrl.envs import EnvBase, SerialEnv
from torchrl.envs.common import EnvMetaData

from marlplug.ray_connection import (
    RayUnavailableError,
    check_reachable,
    loopback_only,
    unavailable_message,
)
from marlplug.torch_threads import kept_thread_count

#: The config field every one-line error here starts with.
FIELD = "env.copies"
_CHOICES = "serial, processes"


class CopyActor:
    """One env copy inside a Ray actor (wrapped with ``ray.remote`` when copies start): the calls
    ``SerialEnv`` makes on a copy, run on the copy."""

    def __init__(self, make_one: Callable[[], EnvBase]) -> None:
        self.env = make_one()

    def reset(self, tensordict: TensorDictBase | None, kwargs: dict[str, Any]) -> TensorDictBase:
        return self.env.reset(tensordict=tensordict, **kwargs)

    def step(self, tensordict: TensorDictBase) -> TensorDictBase:
        # SerialEnv calls a copy's _step (the batched env's step does the bookkeeping once).
        return self.env._step(tensordict)

    def set_seed(self, seed: int | None, static_seed: bool) -> int | None:
        return self.env.set_seed(seed, static_seed=static_seed)

    def state_dict(self) -> Any:
        return self.env.state_dict()

    def load_state_dict(self, state_dict: Any) -> None:
        self.env.load_state_dict(state_dict)

    def node(self) -> str:
        """The id of the Ray node this copy runs on."""
        import ray

        return str(ray.get_runtime_context().get_node_id())

    def pid(self) -> int:
        """The id of the process this copy runs in."""
        return os.getpid()


class RemoteCopy(EnvBase):
    """A copy that runs in a Ray actor, as ``SerialEnv`` sees one of its copies: the copy's specs
    (read once, in this process) and its calls forwarded to the actor.

    :meth:`send_step` starts a step without waiting; the next :meth:`_step` returns its answer.
    """

    def __init__(self, actor: Any, specs: Any, meta: EnvMetaData) -> None:
        super().__init__(device=meta.device, batch_size=meta.batch_size)
        self.actor = actor
        self.full_action_spec = specs["input_spec", "full_action_spec"].clone()
        self.full_state_spec = specs["input_spec", "full_state_spec"].clone()
        self.full_observation_spec = specs["output_spec", "full_observation_spec"].clone()
        self.full_reward_spec = specs["output_spec", "full_reward_spec"].clone()
        self.full_done_spec = specs["output_spec", "full_done_spec"].clone()
        self._sent_step: Any = None

    def _get(self, ref: Any) -> Any:
        import ray

        return ray.get(ref)

    def send_step(self, tensordict: TensorDictBase) -> None:
        self._sent_step = self.actor.step.remote(tensordict)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        ref, self._sent_step = self._sent_step, None
        if ref is None:  # a partial step: SerialEnv asks the copies it steps one at a time
            ref = self.actor.step.remote(tensordict)
        return self._get(ref)

    def reset(
        self, tensordict: TensorDictBase | None = None, **kwargs: Any
    ) -> TensorDictBase:  # the copy's own reset, all of it, in the actor
        return self._get(self.actor.reset.remote(tensordict, kwargs))

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        raise NotImplementedError("reset runs in the actor")  # pragma: no cover

    def set_seed(self, seed: int | None = None, static_seed: bool = False) -> int | None:
        return self._get(self.actor.set_seed.remote(seed, static_seed))

    def _set_seed(self, seed: int | None) -> None:
        raise NotImplementedError("set_seed runs in the actor")  # pragma: no cover

    def state_dict(self, *args: Any, **kwargs: Any) -> Any:
        return self._get(self.actor.state_dict.remote())

    def load_state_dict(self, state_dict: Any, *args: Any, **kwargs: Any) -> Any:
        self._get(self.actor.load_state_dict.remote(state_dict))

    def close(self, *, raise_if_closed: bool = True) -> None:
        if self.actor is not None:
            import ray

            ray.kill(self.actor)
            self.actor = None
        self.is_closed = True


class _ActorFactory:
    """What ``SerialEnv`` calls to make copy k: an actor that builds the copy, and its proxy."""

    def __init__(self, make_one: Callable[[], EnvBase], meta: EnvMetaData) -> None:
        self.make_one, self.meta = make_one, meta

    def __call__(self) -> RemoteCopy:
        import ray

        # SPREAD: the copies over the cluster's nodes, as the learners are spread. No CPU
        # reserved: a copy never waits for one (nor leaves coded learners on the same Ray waiting);
        # it shares the cores of its node.
        actor = (
            ray.remote(CopyActor)
            .options(num_cpus=0, scheduling_strategy="SPREAD")
            .remote(self.make_one)
        )
        return RemoteCopy(actor, self.meta.specs, self.meta)


class RayCopies(SerialEnv):
    """``SerialEnv`` whose copies run in Ray actors (see the module docstring); closing it kills
    them and lets go of the Ray it joined. Build it with :func:`ray_copies`."""

    def __init__(
        self, num_envs: int, factory: _ActorFactory, *, device: str, session: _RaySession
    ) -> None:
        self._session = session
        self._copy_meta = factory.meta
        super().__init__(num_envs, factory, device=device)

    def _get_metadata(self, create_env_fn: list[Callable], create_env_kwargs: list[dict]) -> None:
        # The copy built in this process already gave them (SerialEnv would start an actor).
        self._set_metadata(self._copy_meta)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        partial = tensordict.get("_step", None)
        if partial is None or bool(partial.all()):
            # every copy gets its action first; SerialEnv then collects the answers in order
            for index, copy in enumerate(self._envs):
                copy.send_step(tensordict[index])
        return super()._step(tensordict)

    def close(self, *, raise_if_closed: bool = True) -> None:
        try:
            with kept_thread_count():  # as serial copies keep it (marlplug.envs.copies)
                super().close(raise_if_closed=raise_if_closed)
        finally:
            self._session.release()


class _RaySession:
    """The Ray the env copies use; shuts down, when the last env holding it closes, a Ray that it
    started (never one it joined or found running)."""

    _lock = threading.Lock()
    _holders = 0
    _started = False

    def __init__(self) -> None:
        self._held = True

    @classmethod
    def acquire(cls) -> _RaySession:
        try:
            import ray
        except ImportError:
            raise RayUnavailableError(
                f"{FIELD}: 'ray' needs Ray; install it with `pip install marlplug[ray]`, "
                f"or choose one of {_CHOICES}"
            ) from None
        with cls._lock:
            if not ray.is_initialized():
                cls._start(ray)
            cls._holders += 1
        return cls()

    @classmethod
    def _start(cls, ray: Any) -> None:
        address = os.environ.get("RAY_ADDRESS") or None
        if address is not None:
            check_reachable(
                address, field=FIELD, unset_hint="unset RAY_ADDRESS to start a local Ray"
            )
        try:
            if address is None:
                with loopback_only():
                    # "local": a Ray of its own, even where `ray start` left one on this machine.
                    ray.init(
                        address="local",
                        include_dashboard=False,
                        log_to_driver=False,
                        logging_level=logging.WARNING,
                    )
                cls._started = True
            else:
                ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise RayUnavailableError(
                unavailable_message(address, exc, field=FIELD)
                + f" (RAY_ADDRESS; or choose one of {_CHOICES})"
            ) from None

    def release(self) -> None:
        cls = type(self)
        with cls._lock:
            if self._held:  # once per env, however often it is closed
                self._held = False
                cls._holders -= 1
            if cls._holders == 0 and cls._started:
                import ray

                ray.shutdown()
                cls._started = False


def ray_copies(
    make_one: Callable[[], EnvBase],
    *,
    num_envs: int,
    seed: int | None,
    device: str,
    first: EnvBase,
    group_map: Mapping[str, Sequence[str]],
) -> RayCopies:
    """``num_envs`` copies of ``make_one()`` (an unbatched env), each in a Ray actor, in a started
    :class:`RayCopies` with ``group_map``; seeded like ``serial_copies``. ``first`` is a copy
    built in this process for the specs (it is not closed here).

    ``make_one`` is sent to the actors with cloudpickle. Close the env when done: that kills the
    actors and shuts down a Ray started for them.

    Examples:
        >>> from marlplug.envs import get_scenario
        >>> scenario = get_scenario("cooperative_navigation")(agents=2)
        >>> make_one = lambda: scenario.make(num_envs=1)
        >>> first = make_one()
        >>> env = ray_copies(make_one, num_envs=2, seed=0, device="cpu", first=first,
        ...                  group_map=first.group_map)  # doctest: +SKIP
        >>> env.rollout(3)["next", "agent", "reward"].shape  # doctest: +SKIP
        torch.Size([2, 3, 2, 1])
        >>> env.close()  # doctest: +SKIP
    """
    meta = EnvMetaData.metadata_from_env(first)
    session = _RaySession.acquire()
    env: RayCopies | None = None
    try:
        env = RayCopies(num_envs, _ActorFactory(make_one, meta), device=device, session=session)
        env.start()
        env.group_map = {group: list(agents) for group, agents in group_map.items()}
        if seed is not None:
            env.set_seed(seed)
    except BaseException:
        if env is not None and not env.is_closed:
            env.close()
        else:
            session.release()
        raise
    return env


def copy_nodes(env: RayCopies) -> list[str]:
    """The Ray node each copy of ``env`` runs on, in copy order."""
    import ray

    return [str(node) for node in ray.get([copy.actor.node.remote() for copy in env._envs])]


def copy_pids(env: RayCopies) -> list[int]:
    """The process each copy of ``env`` runs in, in copy order (on its node)."""
    import ray

    return [int(pid) for pid in ray.get([copy.actor.pid.remote() for copy in env._envs])]


__all__ = [
    "CopyActor",
    "RayCopies",
    "RemoteCopy",
    "copy_nodes",
    "copy_pids",
    "ray_copies",
]
