"""VER's collection: dynamic batching over whichever envs are ready.

VER paper, section 2.  Envs step in their own processes
(:class:`~habitat_ver.system.per_env_pool.PerEnvPool`) as soon as their
action arrives; :class:`VERCollector` runs inference on every env whose result
has arrived, all at once (up to all ``N``, waiting a little for
``min_batch_fraction * N`` of them), writes each step into
:class:`~habitat_ver.storage.ver_storage.VERStorage` and sends the actions.
A rollout ends once the storage holds its ``T * N`` steps (NoVER: ``T`` per
env).  An env whose result arrives when it no longer fits is *held*: it has no
action in flight, so whoever collects next acts on it first.

With ``overlap_rollouts_and_learn`` a thread keeps collecting into the next
rollout's storage while PPO learns (:meth:`VERCollector.collecting_while`),
acting with a frozen copy of the pre-update policy.

What a rollout is for (preemption across ranks, statistics, learning) is the
trainer's: it passes a ``preempted(new_steps)`` callback to
:meth:`VERCollector.collect`.
"""

import contextlib
import copy
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, cast

import torch
from habitat_baselines.utils.common import inference_mode
from torch import Tensor

from habitat_ver.storage.ver_storage import VERStorage
from habitat_ver.system.env_pool import AsyncEnvPool
from habitat_ver.system.process_names import OVERLAP_THREAD, name_this_thread
from habitat_ver.system.reward_guard import NonFiniteRewards
from habitat_ver.system.truncation import truncated_from_info_rows

# (env ids, rewards, dones, info rows, each env's info names) of one
# completed step per env.
RecordEpisodes = Callable[[Tensor, Tensor, Tensor, Tensor, Sequence[Sequence[str]]], None]
Transform = Callable[[Dict[str, Tensor]], Dict[str, Tensor]]

# Seconds the overlap thread waits for a ready env before it looks at its stop flag.
OVERLAP_POLL_S = 0.05


@dataclass
class InferenceStats:
    """Inference calls since the last :meth:`take` (logged per update)."""

    calls: int = 0
    steps: int = 0
    seconds: float = 0.0

    def add(self, steps: int, seconds: float) -> None:
        self.calls += 1
        self.steps += steps
        self.seconds += seconds

    def take(self) -> "InferenceStats":
        """These counts; counting restarts from zero."""
        taken = InferenceStats(self.calls, self.steps, self.seconds)
        self.calls, self.steps, self.seconds = 0, 0, 0.0
        return taken


class VERCollector:
    """Collects VER (and NoVER) rollouts from envs that step independently.

    Args:
        envs: the env workers (an
            :class:`~habitat_ver.system.env_pool.AsyncEnvPool`, e.g. an
            :class:`~habitat_ver.system.per_env_pool.PerEnvPool`).
        min_batch_fraction: inference waits for this fraction of the envs...
        max_wait_ms: ...but no longer than this after the first result.
        device: where the policy runs.
        transform: habitat's observation transforms, on a batch.
        nonfinite_rewards: counts (and past its limit refuses) NaN/inf rewards.
        record_episodes: the trainer's episode statistics, given each
            completed step.
        clock: wall clock of collection times (seconds); tests substitute it.
    """

    def __init__(
        self,
        envs: AsyncEnvPool,
        min_batch_fraction: float,
        max_wait_ms: float,
        device: torch.device,
        transform: Transform,
        nonfinite_rewards: NonFiniteRewards,
        record_episodes: RecordEpisodes,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.envs = envs
        n = envs.num_envs
        self._min_batch = max(1, int(min_batch_fraction * n))
        self._max_wait_s = max_wait_ms / 1000.0
        self.device = device
        self._transform = transform
        self.nonfinite_rewards = nonfinite_rewards
        self._record_episodes = record_episodes
        self.clock = clock
        # Envs whose result arrived but did not fit in the rollout: they get
        # their action at the start of the next one.
        self.held: List[int] = []
        self._fresh = True  # every env waits for its first action
        # Seconds the overlap thread spent filling the current rollout.
        self._overlap_collect_s = 0.0
        # overlap_rollouts_and_learn: the policy copy the thread acts with.
        self._inference_policy: Optional[Any] = None
        self._hidden = torch.zeros(0)
        self._prev_actions = torch.zeros(0)
        self.inference = InferenceStats()
        # Envs with an action in flight: sent, their result not yet taken.
        self._in_flight = 0

    # ------------------------------------------------------------- batches
    def wait_ready(self, timeout: Optional[float] = None) -> List[int]:
        """Ready envs, batched as ``habitat_baselines.rl.ver`` asks.

        Raises:
            queue.Empty: none arrived within ``timeout`` (None: wait).
        """
        ids = self.envs.wait_ready(
            max_batch=self.envs.num_envs,
            min_batch=self._min_batch,
            max_wait_s=self._max_wait_s,
            timeout=timeout,
        )
        self._in_flight -= len(ids)
        return ids

    def settle(self, timeout_s: float) -> bool:
        """Waits up to ``timeout_s`` until no env has an action in flight; the
        results that arrive are held for the next rollout.

        Returns:
            Whether every env is idle now.
        """
        deadline = self.clock() + timeout_s
        while self._in_flight > 0 and (left := deadline - self.clock()) > 0:
            try:
                self.held.extend(self.wait_ready(timeout=left))
            except queue.Empty:
                break
        return self._in_flight == 0

    def admit(self, ids: List[int], rollouts: VERStorage) -> List[int]:
        """The ready envs whose step fits in ``rollouts``; the rest are held."""
        if rollouts.variable_experience:
            room = rollouts.num_steps * rollouts.num_envs - rollouts.steps_collected
            fits, held = ids[:room], ids[room:]
        else:
            counts = rollouts.env_steps
            fits = [i for i in ids if counts[i] < rollouts.num_steps]
            held = [i for i in ids if counts[i] >= rollouts.num_steps]
        self.held.extend(held)
        return fits

    def act(self, ids: Tensor, rollouts: VERStorage, policy: Any, first: bool = False) -> None:
        """Inference for ``ids`` on their latest results, then send actions.

        Args:
            ids: env ids whose results arrived. ``[n]``
            rollouts: the storage the steps go to.
            policy: the policy that acts (the agent's, or the overlap
                thread's frozen copy).
            first: the envs' first observations (no step completes).
        """
        observations, rewards, dones, infos = self.envs.read(ids)  # copies
        masks = torch.logical_not(dones).view(-1, 1)
        if first:
            masks[:] = False
        started = self.clock()
        batch = self._transform({k: v.to(self.device) for k, v in observations.items()})
        hidden, prev_actions = self._hidden[ids], self._prev_actions[ids]
        with inference_mode():
            out = policy.act(batch, hidden, prev_actions, masks.to(self.device))
        self.inference.add(len(ids), self.clock() - started)
        # The envs step while their step is stored: between a result and its
        # action there is the policy only (in the wait-bound regime, the
        # bookkeeping below would add to every step's wait).
        self.envs.send_actions(ids, out.env_actions.cpu())
        self._in_flight += len(ids)
        truncated = None
        if first:  # no step completes: rewards unused
            rewards = torch.zeros_like(rewards)
        else:
            truncated = truncated_from_info_rows(ids, infos, self.envs.info_names, dones)
            rewards = self.nonfinite_rewards.clean(ids, rewards)
            self._record_episodes(ids, rewards, dones, infos, self.envs.info_names)
        rollouts.insert(
            ids,
            observations=batch,
            recurrent_hidden_states=hidden,
            prev_actions=prev_actions,
            masks=masks,
            actions=out.actions,
            action_log_probs=out.action_log_probs,
            value_preds=out.values,
            rewards=rewards.view(-1, 1),
            truncated=truncated,
        )
        self._hidden[ids] = out.rnn_hidden_states
        self._prev_actions[ids] = out.actions

    def _act_on(self, ids: List[int], rollouts: VERStorage, policy: Any) -> None:
        if ids:
            self.act(torch.tensor(ids, dtype=torch.long), rollouts, policy)

    def act_on_held(self, rollouts: VERStorage, policy: Any) -> None:
        """Acts on the held envs that fit in ``rollouts``; the rest stay held.

        Held envs have no action in flight, so no result of theirs will
        arrive: whoever collects next must act on them first, or they idle.
        """
        held, self.held = self.held, []
        self._act_on(self.admit(held, rollouts), rollouts, policy)

    # ------------------------------------------------------------ rollouts
    def _start(self, rollouts: VERStorage, policy: Any) -> None:
        if self._fresh:
            n = self.envs.num_envs
            self._hidden = torch.zeros(
                n, policy.num_recurrent_layers, policy.recurrent_hidden_size, device=self.device
            )
            actions = cast(Tensor, rollouts.buffers["actions"])
            self._prev_actions = torch.zeros(
                n, *actions.shape[1:], dtype=actions.dtype, device=self.device
            )
            self.act(torch.arange(n), rollouts, policy, first=True)
            self._fresh = False
        # Nothing fits when the overlap thread already filled this rollout
        # while PPO learnt: the held envs wait for the next one.
        self.act_on_held(rollouts, policy)

    def collect(
        self, rollouts: VERStorage, policy: Any, preempted: Callable[[int], bool]
    ) -> Tuple[int, float]:
        """Collect until ``rollouts`` holds its T*N (NoVER: T per env) steps,
        or until ``preempted(new_steps)`` says this rank should stop.

        Returns:
            The steps the rollout holds and the seconds they took, those the
            overlap thread collected while PPO learnt included (without them
            the step time, VER's Time(S) estimate, is optimistic).
        """
        start = self.clock()
        self._start(rollouts, policy)
        # Steps passed to `preempted` so far: the first call also brings those
        # collected during learning, which count towards VER's S.
        counted = 0
        while not rollouts.rollout_done:
            ids = self.admit(self.wait_ready(), rollouts)
            if ids:
                self._act_on(ids, rollouts, policy)
                new, counted = rollouts.steps_collected - counted, rollouts.steps_collected
                if preempted(new):
                    break
        if rollouts.steps_collected > counted:
            # The overlap thread filled the whole rollout while PPO learnt: the
            # loop never ran, and the other ranks still need these steps.
            preempted(rollouts.steps_collected - counted)
        seconds = self.clock() - start + self._overlap_collect_s
        self._overlap_collect_s = 0.0
        return rollouts.steps_collected, seconds

    # ------------------------------------------------ overlapped collection
    @contextlib.contextmanager
    def collecting_while(self, rollouts: VERStorage, policy: Any) -> Iterator[None]:
        """Envs keep stepping into ``rollouts`` while the block (PPO) runs.

        A thread acts with a frozen copy of ``policy`` (its weights now) and
        fills ``rollouts``, the next rollout's storage.  Its steps carry the
        old policy version, so PPO's ratio (and the logged
        ``system/policy_lag``) treat them as one update stale.  An
        error of the thread is raised when the block ends.
        """
        frozen = self._frozen(policy)
        stop, failure = threading.Event(), cast(List[BaseException], [])
        thread = threading.Thread(
            target=self._collect_until,
            args=(rollouts, frozen, stop, failure),
            name="habitat_ver-overlap-collector",
            daemon=True,
        )
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
        if failure:
            raise failure[0]

    def _frozen(self, policy: Any) -> Any:
        """A copy of ``policy`` with its current weights, for the thread."""
        if self._inference_policy is None:
            self._inference_policy = copy.deepcopy(policy).eval().requires_grad_(False)
        self._inference_policy.load_state_dict(policy.state_dict())
        return self._inference_policy

    def _collect_until(
        self,
        rollouts: VERStorage,
        policy: Any,
        stop: threading.Event,
        failure: List[BaseException],
    ) -> None:
        """The overlap thread: collect into ``rollouts`` until ``stop`` or full."""
        name_this_thread(OVERLAP_THREAD)
        start = self.clock()
        try:
            # First: when learning outlasts this whole collection, held envs
            # would otherwise get no action until the rollout after.
            self.act_on_held(rollouts, policy)
            while not stop.is_set() and not rollouts.rollout_done:
                try:
                    ready = self.wait_ready(timeout=OVERLAP_POLL_S)
                except queue.Empty:
                    continue
                self._act_on(self.admit(ready, rollouts), rollouts, policy)
        except BaseException as error:  # noqa: BLE001 - re-raised by collecting_while
            failure.append(error)
        finally:
            self._overlap_collect_s = self.clock() - start
