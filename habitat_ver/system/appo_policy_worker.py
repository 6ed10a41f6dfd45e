"""APPO's policy worker: batched inference across rollout workers.

Sample Factory (Petrenko et al. 2020, section 3.2): the policy worker takes
every group of envs whose results have arrived, from whichever rollout
workers, runs the policy once on all of them, writes the actions into the
envs' shared rows and tells each worker to step that group.  It also writes
each step into the env's current trajectory slot
(:class:`~habitat_ver.system.appo_buffers.TrajectoryBuffers`) and hands a
slot's index to the learner once it holds ``T`` steps.

It runs as a thread of the learner's process with its own copy of the
policy.  The learner publishes new weights with :meth:`PolicyWorker.publish`
(a ``load_state_dict`` into that copy, no pickling) under the same lock that
inference holds, so every inference batch uses exactly one version: the
latest one published before it started (section 3.4's policy lag is then
at most the learner's queue, see ``rl.appo.max_policy_lag``).
"""

import collections
import itertools
import queue
import threading
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple

import torch
from habitat_baselines.utils.common import inference_mode
from torch import Tensor

from habitat_ver.system.appo_buffers import SlotPool, TrajectoryBuffers
from habitat_ver.system.env_pool import AsyncGroupPool
from habitat_ver.system.process_names import POLICY_THREAD, name_this_thread
from habitat_ver.system.reward_guard import DEFAULT_MAX_NONFINITE_REWARDS, NonFiniteRewards
from habitat_ver.system.shared_buffers import record_episode_stats
from habitat_ver.system.truncation import truncated_from_info_rows

# Seconds a blocking wait sleeps before it looks at the stop flag again.
POLL_S = 0.05
# Inference batches and publications remembered for lag checks.
LOG_LENGTH = 100_000


class PolicyWorker:
    """Inference thread between the rollout workers and the learner.

    Args:
        pool: the rollout workers (in processes or serial).
        policy: the policy copy this thread acts with (weights via publish).
        trajectories: the shared trajectory slots.
        slots: the free-slot pool (the learner gives slots back).
        device: where the policy runs.
        obs_transform: applied to each observation batch before the policy.
        max_nonfinite_rewards: NaN/inf rewards tolerated (learnt as 0,
            counted in :attr:`nonfinite_rewards`) before the thread fails.
    """

    def __init__(
        self,
        pool: AsyncGroupPool,
        policy: Any,
        trajectories: TrajectoryBuffers,
        slots: SlotPool,
        device: torch.device,
        obs_transform: Callable[[Dict[str, Tensor]], Dict[str, Tensor]] = lambda b: b,
        max_nonfinite_rewards: int = DEFAULT_MAX_NONFINITE_REWARDS,
    ):
        self.pool, self.policy, self.trajectories = pool, policy, trajectories
        self.slots, self.device, self._transform = slots, device, obs_transform
        n, T = pool.num_envs, trajectories.num_steps
        self.T = T
        self._slot = torch.full((n,), -1, dtype=torch.long)  # slot each env fills
        self._t = torch.zeros(n, dtype=torch.long)  # its next step in that slot
        self._hidden = torch.zeros(n, *trajectories.hidden.shape[1:])
        actions = trajectories.actions
        self._prev_actions = torch.zeros(n, *actions.shape[2:], dtype=actions.dtype)
        self.full: "queue.Queue[int]" = queue.Queue()  # complete slots, in order
        self.version = -1
        self._lock = threading.Lock()
        self._seq = itertools.count()
        # (sequence number, version) of each inference batch and publication.
        self.served: Deque[Tuple[int, int]] = collections.deque(maxlen=LOG_LENGTH)
        self.published: Deque[Tuple[int, int]] = collections.deque(maxlen=LOG_LENGTH)
        self.stats_lock = threading.Lock()
        self._episode_reward = torch.zeros(n, 1)
        self.running_stats: Dict[str, Tensor] = dict(
            count=torch.zeros(n, 1), reward=torch.zeros(n, 1)
        )
        self.nonfinite_rewards = NonFiniteRewards(max_nonfinite_rewards)
        self._stop = threading.Event()
        self._failure: List[BaseException] = []
        self._thread: Optional[threading.Thread] = None

    # ----------------------------------------------------------- learner side
    def publish(self, state_dict: Dict[str, Tensor], version: int) -> None:
        """Make ``state_dict`` (policy version ``version``) the acting policy."""
        with self._lock:
            self.policy.load_state_dict(state_dict)
            self.version = version
            self.published.append((next(self._seq), version))

    def start(self, first_ready: List[Tuple[int, int]]) -> None:
        """Start acting; ``first_ready``: the groups whose results are written."""
        self._thread = threading.Thread(
            target=self._run, args=(first_ready,), name="habitat_ver-appo-policy", daemon=True
        )
        self._thread.start()

    def take_full(self) -> int:
        """The next complete slot; raises what the thread failed with."""
        while True:
            self._raise_failure()
            try:
                return self.full.get(timeout=POLL_S)
            except queue.Empty:
                if self._thread is not None and not self._thread.is_alive():
                    self._raise_failure()
                    raise RuntimeError("the APPO policy worker stopped") from None

    def _raise_failure(self) -> None:
        if self._failure:
            raise self._failure[0]

    def stop(self) -> None:
        """Stop the thread (idempotent; callable from the thread itself)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    # ------------------------------------------------------------ the thread
    def _run(self, first_ready: List[Tuple[int, int]]) -> None:
        name_this_thread(POLICY_THREAD)
        try:
            ready = list(first_ready)
            while not self._stop.is_set():
                if ready:
                    self._serve(ready)
                ready = self._wait_ready()
        except BaseException as error:  # noqa: BLE001 - re-raised in the learner
            self._failure.append(error)

    def _wait_ready(self) -> List[Tuple[int, int]]:
        """Every ``(worker, group)`` whose results arrived (blocks for one)."""
        try:
            ready = [self.pool.next_report(POLL_S)[1:]]
        except queue.Empty:
            return []
        while True:
            try:
                ready.append(self.pool.next_report(0)[1:])
            except queue.Empty:
                return ready

    def _take_slot(self) -> Optional[int]:
        while not self._stop.is_set():
            try:
                slot = self.slots.take(timeout=POLL_S)
            except queue.Empty:
                continue
            self.trajectories.clear(slot)
            return slot
        return None

    def _serve(self, ready: List[Tuple[int, int]]) -> None:
        ids = torch.tensor([i for w, g in ready for i in self.pool.groups[w][g]])
        buffers = self.pool.buffers
        observations = {k: v[ids] for k, v in buffers.observations.items()}
        rewards, dones = buffers.rewards[ids].clone(), buffers.dones[ids].clone()
        started = self._slot[ids] >= 0
        rewards[started] = self.nonfinite_rewards.clean(ids[started], rewards[started])
        infos = buffers.infos[ids[started]]
        self._record_episodes(ids[started], rewards[started], dones[started], infos)
        masks = torch.logical_not(dones).view(-1, 1) & started.view(-1, 1)
        truncated = truncated_from_info_rows(
            ids[started], infos, self.pool.info_names, dones[started]
        )
        self._finish_steps(ids[started], rewards[started], dones[started], truncated)
        self._close_full(ids, observations, masks)
        if self._stop.is_set():
            return
        env_actions = self._act(ids, observations, masks)
        buffers.actions[ids] = env_actions.to(buffers.actions.dtype).view(
            len(ids), *buffers.actions.shape[1:]
        )
        for worker, group in ready:
            self.pool.send(worker, group)

    def _finish_steps(self, ids: Tensor, rewards: Tensor, dones: Tensor, truncated: Tensor) -> None:
        """The reward, done and time-limit cut of each env's last action
        complete its step."""
        slots, ts = self._slot[ids], self._t[ids]
        traj = self.trajectories
        traj.rewards[slots, ts] = rewards.view(-1, 1)
        traj.dones[slots, ts] = dones.view(-1, 1)
        traj.truncated[slots, ts] = truncated.view(-1, 1)
        self._t[ids] += 1

    def _close_full(self, ids: Tensor, observations: Dict[str, Tensor], masks: Tensor) -> None:
        """Slots that now hold T steps get the bootstrap observation and go to
        the learner; those envs, and envs without a slot, get a fresh slot."""
        traj = self.trajectories
        done = self._t[ids] >= self.T
        full, rows = self._slot[ids][done], done.nonzero().view(-1)
        for k, v in observations.items():
            traj.observations[k][full, self.T] = v[rows]
        traj.masks[full, self.T] = masks[rows]
        traj.prev_actions[full, self.T] = self._prev_actions[ids[rows]]
        traj.actions[full, self.T] = torch.zeros_like(traj.actions[full, self.T])
        for slot in full.tolist():
            self.full.put(slot)
        for env in ids[done | (self._slot[ids] < 0)].tolist():
            slot = self._take_slot()
            if slot is None:
                return
            self._slot[env], self._t[env] = slot, 0
            traj.env_ids[slot] = env

    def _act(self, ids: Tensor, observations: Dict[str, Tensor], masks: Tensor) -> Tensor:
        """Inference on ``ids``; writes step ``t`` of their slots and returns
        the actions to execute."""
        batch = self._transform({k: v.to(self.device) for k, v in observations.items()})
        hidden, prev_actions = self._hidden[ids], self._prev_actions[ids]
        with self._lock, inference_mode():
            out = self.policy.act(
                batch, hidden.to(self.device), prev_actions.to(self.device), masks.to(self.device)
            )
            version = self.version
            self.served.append((next(self._seq), version))
        slots, ts, traj = self._slot[ids], self._t[ids], self.trajectories
        for k, v in observations.items():
            traj.observations[k][slots, ts] = v
        traj.masks[slots, ts] = masks
        traj.prev_actions[slots, ts] = prev_actions
        traj.actions[slots, ts] = out.actions.cpu().to(traj.actions.dtype)
        traj.behaviour_log_probs[slots, ts] = out.action_log_probs.cpu().float()
        traj.value_preds[slots, ts] = out.values.cpu().float()
        traj.versions[slots, ts] = version
        first = ts == 0
        traj.hidden[slots[first]] = hidden[first]
        self._hidden[ids] = out.rnn_hidden_states.cpu()
        self._prev_actions[ids] = out.actions.cpu().to(self._prev_actions.dtype)
        env_actions: Tensor = out.env_actions.cpu()
        return env_actions

    def _record_episodes(self, ids: Tensor, rewards: Tensor, dones: Tensor, infos: Tensor) -> None:
        """Upstream's episode statistics (return, count, info metrics of each
        episode's last step), under :attr:`stats_lock` for the learner."""
        with self.stats_lock:
            record_episode_stats(
                self.running_stats,
                self._episode_reward,
                ids,
                rewards,
                dones,
                infos,
                self.pool.info_names,
            )
