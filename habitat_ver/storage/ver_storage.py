"""VER's rollout storage: a linear buffer written one step per env at a time.

VER paper, section 2.2. Envs step at their own pace, so there is no
``[T, N]`` grid: each step lands in the next free *slot* of a linear buffer of
``(T + 1) * N`` slots (``T * N`` learnable steps plus, per env, the step whose
reward has not arrived yet). A rollout ends after ``T * N`` learnable steps
from whichever envs were fastest (``variable_experience``), or after exactly
``T`` from every env (NoVER).

A step of env ``e``: inference on ``o_t`` writes a slot (:meth:`VERStorage.insert`)
that stays *pending* until ``e``'s next observation arrives with ``r_t``. At
the end of a rollout each env's pending slot gives the bootstrap value, and
:meth:`VERStorage.after_update` carries it into the next rollout as that env's
first step: its action is in flight (the VER paper's "inflight actions"), so
the system should send every action it computed, the last batch's included.

Learning on the written steps (sequences for the return estimator, importance
weights, minibatches) is :class:`~habitat_ver.storage.ver_learning.VERLearning`'s;
the buffer layout is :mod:`habitat_ver.storage.ver_layout`'s.

Multi-rank VER preempts slow ranks; a preempted rank fills the rest of its
batch with the previous rollout's most recent fresh steps
(:meth:`VERStorage.fill_stale`, :mod:`habitat_ver.storage.stale_fill`), which
keep the returns computed for them then: PPO simply runs extra epochs on them
(VER paper, section 2.3).
"""

from typing import Any, List, Optional, cast

import torch
from habitat_baselines.common.storage import Storage
from habitat_baselines.common.tensor_dict import TensorDict
from torch import Tensor

from habitat_ver.storage import minibatch as mb
from habitat_ver.storage.stale_fill import reuse_order, stale_fill_plan
from habitat_ver.storage.ver_layout import (
    MINIBATCH_MODES,
    SENTINEL_KEYS,
    allocate_buffers,
    validate_options,
    write_rows,
)
from habitat_ver.storage.ver_learning import VERLearning

__all__ = ["MINIBATCH_MODES", "VERStorage"]


class VERStorage(VERLearning, Storage):
    """Linear rollout buffer for VER (and NoVER); see the module docstring.

    Attributes:
        buffers: ``[(T + 1) * N, ...]`` tensors: ``observations`` (dict),
            ``recurrent_hidden_states`` ``[L, H]``, ``actions``,
            ``prev_actions``, ``masks``, ``action_log_probs``, ``value_preds``,
            ``rewards``, ``returns``, ``policy_version`` and, with variable
            experience, ``is_coeffs``. PPO's ``get_advantages`` reads
            ``returns - value_preds``; slots that are not learnable hold NaN
            returns, which its normalisation skips.
        current_policy_version: version stamped on new steps by default.
    """

    def __init__(
        self,
        numsteps: int,
        num_envs: int,
        observation_space: Any,
        action_space: Any,
        actor_critic: Any,
        is_double_buffered: bool = False,
        variable_experience: bool = True,
        is_coeff_cap: float = 1.0,
        minibatch_mode: str = "ver",
    ) -> None:
        """habitat's storage contract plus VER's options.

        Args:
            numsteps, num_envs: ``T`` and ``N``.
            observation_space, action_space: what is stored per step.
            actor_critic: gives ``num_recurrent_layers``, ``recurrent_hidden_size``.
            is_double_buffered: must be False; habitat passes it.
            variable_experience: True for VER (``T * N`` steps from any envs,
                weighted by ``is_coeffs``), False for NoVER (``T`` per env).
            is_coeff_cap: truncation of the importance weights (VER: 1.0).
            minibatch_mode: one of :data:`MINIBATCH_MODES`.
        """
        validate_options(is_double_buffered, minibatch_mode, is_coeff_cap)
        self.num_steps, self._num_envs = int(numsteps), int(num_envs)
        self.variable_experience = variable_experience
        self.is_coeff_cap = float(is_coeff_cap)
        self.minibatch_mode = minibatch_mode
        self.capacity = (self.num_steps + 1) * self._num_envs
        self.device = torch.device("cpu")
        self.current_policy_version = 1
        self.buffers = allocate_buffers(
            self.capacity,
            observation_space,
            action_space,
            actor_critic,
            with_is_coeffs=variable_experience,
        )
        # Bookkeeping stays on the CPU: it decides indices.
        long, flag = torch.int64, torch.bool
        cap, n = self.capacity, self._num_envs
        self._slots = TensorDict(
            env_ids=torch.full((cap,), -1, dtype=long),
            step_ids=torch.zeros(cap, dtype=long),
            episode_starts=torch.zeros(cap, dtype=flag),
            dones=torch.zeros(cap, dtype=flag),
            truncated=torch.zeros(cap, dtype=flag),
            learnable=torch.zeros(cap, dtype=flag),
        )
        self._counters = TensorDict(
            num_slots=torch.zeros(1, dtype=long),
            pending_slot=torch.full((n,), -1, dtype=long),
            env_steps=torch.zeros(n, dtype=long),
            next_step_id=torch.zeros(n, dtype=long),
        )
        self._plan: Optional[mb.SlotSequences] = None
        self._fresh_plan: Optional[mb.SlotSequences] = None
        self._bootstrap_values: Optional[Tensor] = None

    # ------------------------------------------------------------ collection
    @property
    def num_envs(self) -> int:
        return self._num_envs

    @property
    def env_steps(self) -> Tensor:
        """Learnable steps collected from each env this rollout. ``[N]``"""
        return self._count("env_steps").clone()

    @property
    def steps_collected(self) -> int:
        return int(self._count("env_steps").sum())

    @property
    def rollout_done(self) -> bool:
        """True once the rollout holds all its learnable steps."""
        if self.variable_experience:
            return self.steps_collected == self.num_steps * self._num_envs
        return bool((self._count("env_steps") == self.num_steps).all())

    def has_pending(self, env_ids: Tensor) -> Tensor:
        """True for envs whose latest step still waits for its reward. ``[n]``"""
        return self._count("pending_slot")[env_ids.cpu()] >= 0

    def _check_room(self, env_ids: Tensor, ids: List[int], completing: Tensor) -> None:
        """Refuses an insert of ``env_ids`` (``ids``, as a list) that would
        overfill the rollout; ``completing``: the envs whose pending step it
        completes."""
        n = len(ids)
        if n == 0 or len(set(ids)) != n:
            raise ValueError(f"env_ids must be non-empty and unique; got {ids}")
        if min(ids) < 0 or max(ids) >= self._num_envs:
            raise ValueError(f"env_ids must lie in [0, {self._num_envs}); got {ids}")
        if self.variable_experience:
            room = self.num_steps * self._num_envs - self.steps_collected
            if completing.numel() > room:
                raise ValueError(
                    f"insert would complete {completing.numel()} steps but the "
                    f"rollout has room for {room}; insert fewer envs (check "
                    f"rollout_done / has_pending first)"
                )
        elif bool((self._count("env_steps")[completing] >= self.num_steps).any()):
            raise ValueError(
                f"NoVER: an env in {ids} already has numsteps={self.num_steps} steps this rollout"
            )

    def insert(  # type: ignore[override]
        self,
        env_ids: Tensor,
        *,
        observations: Any,
        recurrent_hidden_states: Tensor,
        prev_actions: Tensor,
        masks: Tensor,
        actions: Tensor,
        action_log_probs: Tensor,
        value_preds: Tensor,
        rewards: Optional[Tensor] = None,
        policy_version: Optional[Tensor] = None,
        truncated: Optional[Tensor] = None,
    ) -> Tensor:
        """Writes one step for each env in ``env_ids`` (any subset, any order).

        habitat's ``Storage.insert`` is lock-step (``next_*`` at a shared step
        index); VER's steps are keyed by env id, hence this signature.

        Args:
            env_ids: envs whose new observation the policy just acted on;
                unique, in ``[0, N)``.
            observations: dict of sensor tensors, the new observations.
            recurrent_hidden_states: the recurrent state the policy was GIVEN
                with these observations (not its output).
            prev_actions, masks: as given to the policy. ``masks`` is False
                where the observation starts an episode, which also marks the
                env's pending step as ``done``.
            actions, action_log_probs, value_preds: the policy's outputs.
            rewards: reward of each env's pending step (arrived with these
                observations); required when any env has one, ignored for
                envs without one (their first observation).
            policy_version: version that acted; default
                :attr:`current_policy_version`.
            truncated: like ``rewards``, True where the pending step's
                episode end (``masks`` False) was a time-limit cut; its
                return then bootstraps instead of stopping. Default: none.

        Returns:
            The slots written (CPU).

        Shapes:
            env_ids ``[n]``; every other tensor ``[n, ...]``; returns ``[n]``.
        """
        env_ids = env_ids.cpu().long().view(-1)
        ids = env_ids.tolist()
        n = len(ids)
        pending_slot = self._count("pending_slot")
        pending = pending_slot[env_ids]
        # Rows of this insert whose env has a pending step: it completes now.
        rows = torch.nonzero(pending >= 0).view(-1)
        self._check_room(env_ids, ids, env_ids[rows])
        starts = torch.logical_not(masks.cpu().bool().view(n))
        if rows.numel():
            self._complete_pending(env_ids[rows], rows, pending[rows], starts, rewards, truncated)
        first = int(self._count("num_slots"))
        if first + n > self.capacity:
            raise RuntimeError("insert: no room left in the buffer")
        if policy_version is None:
            policy_version = torch.full((n, 1), self.current_policy_version)
        write_rows(
            self.buffers,
            first,
            dict(
                observations=observations,
                recurrent_hidden_states=recurrent_hidden_states,
                prev_actions=prev_actions,
                masks=masks.view(n, 1),
                actions=actions,
                action_log_probs=action_log_probs,
                value_preds=value_preds,
                policy_version=policy_version.view(n, 1),
            ),
        )
        return self._append_slots(first, env_ids, starts)

    def _append_slots(self, first: int, env_ids: Tensor, starts: Tensor) -> Tensor:
        """Slot bookkeeping of :meth:`insert`'s rows, written from ``first``:
        whose step they hold, and each becomes its env's pending step."""
        n = env_ids.numel()
        next_step_id = self._count("next_step_id")
        slots = self._slots
        new = slice(first, first + n)
        cast(Tensor, slots["env_ids"])[new] = env_ids
        cast(Tensor, slots["step_ids"])[new] = next_step_id[env_ids]
        cast(Tensor, slots["episode_starts"])[new] = starts
        for key in ("dones", "truncated", "learnable"):
            cast(Tensor, slots[key])[new] = False
        next_step_id[env_ids] += 1
        new_slots = torch.arange(first, first + n)
        self._count("pending_slot")[env_ids] = new_slots
        self._count("num_slots").add_(n)
        return new_slots

    def _complete_pending(
        self,
        env_ids: Tensor,
        rows: Tensor,
        pending: Tensor,
        starts: Tensor,
        rewards: Optional[Tensor],
        truncated: Optional[Tensor] = None,
    ) -> None:
        """Gives the ``pending`` slots of ``env_ids`` (rows ``rows`` of the
        insert) their reward and done; they become learnable."""
        if rewards is None:
            raise ValueError("insert: rewards are required for envs with a pending step")
        ended = starts[rows]
        got = rewards.reshape(-1, 1)[rows.to(rewards.device)]
        self._buf("rewards")[pending.to(self.device)] = got.to(self.device)
        self._slot("dones")[pending] = ended
        if truncated is not None:
            self._slot("truncated")[pending] = truncated.cpu().bool().view(-1)[rows] & ended
        self._slot("learnable")[pending] = True
        self._count("env_steps")[env_ids] += 1

    def increment_policy_version(self) -> None:
        self.current_policy_version += 1

    def fill_stale(self, previous: "VERStorage") -> int:
        """Fills a preempted rollout up to ``T * N`` learnable steps with the
        most recent learnable steps of ``previous`` (the rollout before).

        ``previous``'s fresh steps come first, latest first; only when they
        are too few (``previous`` was preempted early too) do its own stale
        copies, two rollouts old, make up the rest (:mod:`.stale_fill`).
        The copies keep everything recorded for them, their returns included,
        are flagged ``is_stale`` and form sequences of their own. Call after
        collection, before :meth:`compute_returns`; ``previous`` must still
        hold its data (see ``VERAgentAccessMgr.begin_next_rollout``).

        Returns:
            The number of stale steps added.
        """
        batch = self.num_steps * self._num_envs
        prev_n = int(previous._count("num_slots"))
        prev_learnable = reuse_order(
            previous._slot("learnable")[:prev_n],
            previous._buf("is_stale")[:prev_n].view(-1).cpu(),
        )
        plan = stale_fill_plan(self.steps_collected, batch, prev_learnable.numel())
        if plan.num_stale == 0:
            return 0
        src = prev_learnable[plan.reuse_indices]
        first = int(self._count("num_slots"))
        dst = torch.arange(first, first + plan.num_stale)
        if dst.numel() and int(dst[-1]) >= self.capacity:
            raise RuntimeError("fill_stale: no room left in the buffer")
        self.buffers[dst.to(self.device)] = previous.buffers[src.to(previous.device)]
        self._buf("is_stale")[dst.to(self.device)] = True
        self._slots[dst] = previous._slots[src]
        self._count("num_slots").add_(plan.num_stale)
        return plan.num_stale

    @property
    def num_stale(self) -> int:
        """Stale steps added by :meth:`fill_stale` to this rollout."""
        return int(self._buf("is_stale").sum())

    def after_update(self) -> None:
        """Starts the next rollout, carrying each env's pending step first."""
        self.continue_from(self)

    def continue_from(self, source: "VERStorage") -> None:
        """Makes this storage hold the rollout that follows ``source``'s.

        ``source``'s pending steps (actions in flight) become this storage's
        first slots and everything else is cleared. ``source`` itself is only
        read, so with ``overlap_rollouts_and_learn`` the next rollout fills a
        second storage while PPO still learns on ``source``; with
        ``source is self`` this is :meth:`after_update`.
        """
        if (source.capacity, source.num_envs) != (self.capacity, self._num_envs):
            raise ValueError("continue_from: storages of different sizes")
        pending = source._count("pending_slot")
        has = pending >= 0
        src = pending[has]
        k = src.numel()
        dst = torch.arange(k)
        # Advanced indexing copies the rows first, so source may be self.
        self.buffers[dst.to(self.device)] = source.buffers[src.to(source.device)]
        self._slots[dst] = source._slots[src]
        self._count("next_step_id")[:] = source._count("next_step_id")
        new_pending = torch.full_like(pending, -1)
        new_pending[has] = dst
        self._count("pending_slot")[:] = new_pending
        for key in SENTINEL_KEYS:
            self._buf(key)[k:] = float("nan")
        self._buf("is_stale")[:] = False
        self._slot("env_ids")[k:] = -1
        self._slot("learnable")[:] = False
        self._count("num_slots")[:] = k
        self._count("env_steps")[:] = 0
        self.current_policy_version = source.current_policy_version
        self.returns_for_readers = source.returns_for_readers
        self._plan = self._fresh_plan = self._bootstrap_values = None

    # ------------------------------------------------- habitat's interface
    def to(self, device: Any) -> None:
        self.buffers.map_in_place(lambda t: t.to(device))
        self.device = torch.device(device)

    def share_memory_(self) -> None:
        """Moves buffers and bookkeeping to shared memory (multi-process)."""
        for td in (self.buffers, self._slots, self._counters):
            td.map_in_place(lambda t: t.share_memory_())

    def insert_first_observations(self, batch: Any) -> None:
        """Nothing to store: each observation is stored by :meth:`insert`
        together with the policy's outputs on it (habitat's trainer calls
        this once after resetting the envs)."""

    def advance_rollout(self, buffer_index: int = 0) -> None:
        raise NotImplementedError("VERStorage has no shared step index; insert() advances envs")
