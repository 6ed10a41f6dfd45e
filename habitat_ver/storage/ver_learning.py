"""Learning on VER's linear buffer: sequences, importance weights, minibatches.

VER paper, section 2.2.  After collection, upstream's ``compute_returns``
(:class:`~habitat_ver.storage.return_steps.StepsForReturns`) has
:meth:`VERLearning.lay_out_steps` cut the learnable steps of
:class:`~habitat_ver.storage.ver_storage.VERStorage` at rollout and episode
starts and compute each env's importance weight; the returns of the
sequences are the updater's targets step's
(:meth:`VERLearning.return_steps`, :meth:`VERLearning.store_returns`);
:meth:`VERLearning.data_generator` (once per epoch)
shuffles the sequences and packs ``B`` minibatches of exactly ``T * N / B``
steps (:mod:`habitat_ver.storage.minibatch`).  Every piece of a sequence,
including a tail cut at a minibatch boundary, starts from the recurrent state
recorded at collection time for its first step.  Stale steps (after a
preemption, :mod:`habitat_ver.storage.stale_fill`) keep the returns computed
for them when they were fresh and form sequences of their own.
"""

from typing import Dict, Iterator, List, Optional, cast

import torch
from habitat_baselines.common.tensor_dict import DictTree, TensorDict
from habitat_baselines.rl.models.rnn_state_encoder import build_rnn_build_seq_info
from torch import Tensor

from habitat_ver.algo.importance import truncated_importance_weights
from habitat_ver.storage import minibatch as mb
from habitat_ver.storage.return_steps import RolloutSteps, StepsForReturns
from habitat_ver.storage.stale_fill import with_stale_sequences


class VERLearning(StepsForReturns):
    """The learning half of :class:`~habitat_ver.storage.ver_storage.VERStorage`.

    It reads what the storage's collection wrote: ``buffers`` (per-step
    tensors), ``_slots`` (per slot: env, step id, episode start, done, time
    limit cut, learnable) and ``_counters`` (per env: pending slot, steps).
    """

    buffers: TensorDict
    _slots: TensorDict
    _counters: TensorDict
    _num_envs: int
    _plan: Optional[mb.SlotSequences]
    # The fresh steps' sequences and their bootstrap values (compute_returns).
    _fresh_plan: Optional[mb.SlotSequences]
    _bootstrap_values: Optional[Tensor]
    device: torch.device
    variable_experience: bool
    is_coeff_cap: float
    minibatch_mode: str

    # habitat's TensorDict types every entry as ``Tensor | TensorDict``; the
    # entries read through these three are tensors (only ``observations`` nests).
    def _buf(self, key: str) -> Tensor:
        """The per-step buffer ``key`` (not ``observations``). ``[capacity, ...]``"""
        return cast(Tensor, self.buffers[key])

    def _slot(self, key: str) -> Tensor:
        """The per-slot bookkeeping tensor ``key``. ``[capacity]``"""
        return cast(Tensor, self._slots[key])

    def _count(self, key: str) -> Tensor:
        """The counter ``key``: ``num_slots`` ``[1]``, the others ``[N]``."""
        return cast(Tensor, self._counters[key])

    def lay_out_steps(self, next_value: Optional[Tensor], use_gae: bool) -> None:
        """Cuts the learnable steps into sequences (the plan
        :meth:`data_generator` and :meth:`return_steps` follow), records each
        sequence's bootstrap value and fills ``is_coeffs``; ``use_gae`` is unused.

        Args:
            next_value: optional ``[N, 1]`` bootstrap value per env; None uses
                the value stored with each env's pending step.
        """
        n = int(self._count("num_slots"))
        stale = self._buf("is_stale")[:n].view(-1).cpu()
        fresh = self._slot("learnable")[:n] & ~stale
        env_ids, step_ids, starts, dones = (
            self._slot(k)[:n] for k in ("env_ids", "step_ids", "episode_starts", "dones")
        )
        plan = mb.learnable_sequences(
            env_ids, step_ids, starts, dones, fresh, self._count("pending_slot")
        )
        dev, values = self.device, self._buf("value_preds")
        if next_value is None:
            boot = values[plan.bootstrap_slots.clamp(min=0).to(dev)]
        else:
            boot = next_value.to(values)[plan.envs.to(dev)].view(-1, 1)
        # Sequences ending their episode bootstrap nothing; 0 keeps NaN out.
        self._bootstrap_values = boot.masked_fill(
            (plan.bootstrap_slots < 0).to(dev).view(-1, 1), 0.0
        )
        self._fresh_plan = plan
        if self.variable_experience:
            weights = truncated_importance_weights(self._count("env_steps"), self.is_coeff_cap).to(
                dev
            )
            self._buf("is_coeffs").fill_(float("nan"))
            env_of_step = self._slot("env_ids")[plan.slots].to(dev)
            self._buf("is_coeffs")[plan.slots.to(dev)] = weights[env_of_step].view(-1, 1)
            self._buf("is_coeffs")[:n][stale.to(dev)] = 1.0
        self._plan = with_stale_sequences(
            plan, stale, *(self._slot(k) for k in ("env_ids", "step_ids", "episode_starts"))
        )

    def return_steps(self) -> RolloutSteps:
        """The fresh learnable steps as back-to-back sequences (stale steps
        keep the returns computed when they were fresh), for a return estimator.

        Raises:
            RuntimeError: if :meth:`compute_returns` was not called.
        """
        plan, boot = self._fresh_plan, self._bootstrap_values
        if plan is None or boot is None:
            raise RuntimeError("return_steps: call compute_returns first")
        slots = plan.slots.to(self.device)
        values = self._buf("value_preds")[slots]
        cut = self._truncation(plan.slots, values)
        return RolloutSteps(
            self._buf("rewards")[slots],
            values,
            self._slot("dones")[plan.slots].to(self.device).view(-1, 1),
            boot,
            lengths=plan.lengths.to(self.device),
            truncated=cut.get("truncated"),
            truncation_values=cut.get("truncation_values"),
        )

    def store_returns(self, returns: Tensor) -> None:
        """Writes the fresh steps' returns (in :meth:`return_steps`' order);
        every other step but the stale ones gets NaN (not learnt on).

        Shapes:
            returns: ``[S, 1]``
        """
        plan = self._fresh_plan
        assert plan is not None, "return_steps checked compute_returns"
        # Stale steps keep the returns computed when they were fresh.
        self._buf("returns")[~self._buf("is_stale").view(-1)] = float("nan")
        self._buf("returns")[plan.slots.to(self.device)] = returns

    def _truncation(self, slots: Tensor, values: Tensor) -> Dict[str, Tensor]:
        """Time-limit cuts among ``slots`` and the value to bootstrap there.

        The observation after a cut is already the next episode's first, so
        the value after the cut is approximated by the value of the cut
        step's own observation, ``V(s_t)`` for ``V(s_{t+1})`` (Sample
        Factory's choice; off by one step's change in value).
        """
        cut = self._slot("truncated")[slots]
        if not bool(cut.any()):
            return {}
        return dict(truncated=cut.to(values.device).view(-1, 1), truncation_values=values)

    def _minibatch_pieces(self, num_mini_batch: int) -> List[mb.Pieces]:
        plan = self._plan
        assert plan is not None, "compute_returns sets the plan"
        if self.minibatch_mode == "ver":
            order = mb.random_sequence_order(plan.lengths.numel())
        else:
            order = mb.sequence_order_by_env(plan.envs, torch.randperm(self._num_envs))
        return mb.split_into_minibatches(plan.starts, plan.lengths, order, num_mini_batch)

    def data_generator(
        self, advantages: Optional[Tensor], num_mini_batch: int
    ) -> Iterator[DictTree]:
        """Yields ``num_mini_batch`` minibatches of exactly ``S / B`` steps.

        Rows are steps in PackedSequence order, with every buffer key,
        ``advantages`` (rows of PPO's ``get_advantages`` tensor), one
        ``recurrent_hidden_states`` row per piece (the collection-time state
        of its first step) and ``rnn_build_seq_info`` (omitted when every
        piece is one step long: the RNN then takes its single-step path).

        Raises:
            RuntimeError: if :meth:`compute_returns` was not called.
            ValueError: if ``num_mini_batch`` does not divide the steps.
        """
        if self._plan is None:
            raise RuntimeError("data_generator: call compute_returns first")
        pieces = self._minibatch_pieces(num_mini_batch)
        batch_order = (
            torch.randperm(num_mini_batch).tolist()
            if self.minibatch_mode == "ver"
            else range(num_mini_batch)
        )
        hidden = self._buf("recurrent_hidden_states")
        per_step = TensorDict((k, v) for k, v in self.buffers.items() if v is not hidden)
        for b in batch_order:
            layout = mb.pack_sequences(pieces[b].starts, pieces[b].lengths)
            slots = self._plan.slots[layout.indices].to(self.device)
            num_pieces = layout.lengths.numel()
            batch = per_step[slots]
            batch["recurrent_hidden_states"] = hidden[slots[:num_pieces]]
            if advantages is not None:
                batch["advantages"] = advantages[slots]
            if num_pieces < slots.numel():
                batch["rnn_build_seq_info"] = build_rnn_build_seq_info(
                    self.device, mb.packed_rnn_build_seq_info(layout)
                )
            yield batch.to_tree()
