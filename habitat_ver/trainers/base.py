"""The loop every habitat-ver trainer shares: resume, stop signals, progress.

Upstream's ``PPOTrainer`` provides the pieces reused here: env and agent set-up
(``_init_train``), learning (``_update_agent``), statistics and TensorBoard
logging, and evaluation.  :class:`HabitatVerTrainer` owns the loop around them
so that resume states are written atomically and read safely, a stop signal
(SLURM's warning, preemption) stops every rank after the same update and
requeues the job, the last weights are always checkpointed, and long runs
show progress.  A trainer supplies how it collects (:meth:`collect_rollout`)
and may learn differently (``_update_agent``):

* ``ddppo`` (:mod:`habitat_ver.trainers.ddppo`) steps envs in lock-step and
  adds DD-PPO's straggler preemption;
* ``ver`` (:mod:`habitat_ver.trainers.ver`) runs inference on whichever env
  workers are ready and stores variable experience;
* ``appo`` (:mod:`habitat_ver.trainers.appo`) samples asynchronously.

Checkpoints and resume states are written and read by the layer below,
:class:`~habitat_ver.trainers.checkpointing.CheckpointingTrainer`.
``self.envs`` is an :class:`~habitat_ver.system.env_pool.EnvPool` of the
kind the trainer names in ``ENV_POOL`` (the pool registry).  The
upstream private names this relies on are listed, with the releases checked,
in :mod:`habitat_ver.compat.upstream_private`.
"""

import contextlib
import os
import time
from typing import Any, Dict, FrozenSet, Iterator, List, Optional

import torch
from habitat import logger
from habitat.config import read_write
from habitat_baselines.common.tensorboard_utils import get_writer
from habitat_baselines.rl.ddppo.ddp_utils import get_distrib_size, rank0_only
from habitat_baselines.rl.ppo.ppo_trainer import get_device

from habitat_ver.compat.sim_api import bridge_sim_api
from habitat_ver.common.checks import AUTO
from habitat_ver.common.run_lock import LogFileLock
from habitat_ver.common.log_keys import (
    COLLECT_SPARE_CORES,
    COLLECT_SECONDS,
    LEARN_SECONDS,
    LEARNER_THREADS,
)
from habitat_ver.common.usage import interrupt_exits, usage_errors_exit
from habitat_ver.compat import upstream_private
from habitat_ver.compat.sim_free import HabitatSimRequiredError
from habitat_ver.config.errors import ConfigError
from habitat_ver.config.hab_profile import resolved_profile
from habitat_ver.config.schema import section_or_default
from habitat_ver.config.unread_cameras import without_unread_cameras
from habitat_ver.config.upstream import use_our_env_factory
from habitat_ver.config.validate import validate
from habitat_ver.distributed import requeue
from habitat_ver.distributed.episode_stats import agree_on_episode_stat_keys
from habitat_ver.distributed.rank_devices import rank_backend, use_rank_devices
from habitat_ver.distributed.preemption_rule import (
    DistribPreemptionConfig,
    NoPreemption,
    PreemptionRule,
    PreemptionSetup,
    build_preemption_rule,
)
from habitat_ver.distributed.peer_loss import peer_loss_exits
from habitat_ver.envs.pools import pool_setup
from habitat_ver.storage.return_steps import StepsForReturns
from habitat_ver.system import stop_signals
from habitat_ver.system.env_pool import (
    LOCKSTEP,
    EnvPool,
    SharedBufferPool,
    VectorEnvPool,
    env_pool_kind,
)
from habitat_ver.system.scheduling import Scheduler, learner_num_threads
from habitat_ver.system.spare_cores import SpareCores
from habitat_ver.trainers.checkpointing import CheckpointingTrainer
from habitat_ver.trainers.config_file import (
    run_folder,
    upstream_config_dump_dropped,
    write_config_file,
)
from habitat_ver.trainers.eval_header import (
    envs_for_episodes,
    evaluated_checkpoint,
    header_line,
    planned_episodes,
)
from habitat_ver.trainers.learning_curve import (
    CurveRecorder,
    curve_path,
    run_title,
    write_curve_png,
)
from habitat_ver.trainers.eval_folder import evaluate_folder
from habitat_ver.trainers.run_guards import (
    RUN_ERRORS,
    check_resume_wanted,
    check_same_run,
    checkpoint_folder_owned,
    log_files_closed,
)
from habitat_ver.trainers.training_log import write_training_log
from habitat_ver.updaters.ppo import PPOUpdater
from habitat_ver.updaters.targets import (
    ReturnsConfig,
    RolloutTargets,
    build_return_estimator,
    resolve_return_estimator,
)
from habitat_ver.trainers.progress import (
    ProgressConfig,
    RunProgress,
    RunSummary,
    progress_bar,
    window_mean_reward,
)


class HabitatVerTrainer(CheckpointingTrainer):
    """Upstream's PPO trainer with our loop; subclasses say how they collect."""

    # Upstream types it as habitat's VectorEnv; ours are any EnvPool.
    envs: EnvPool  # type: ignore[assignment]

    # What validation's messages know this trainer as.
    TRAINER_KIND = "base"
    # What it provides to return estimators and preemption rules
    # (habitat_ver.common.capabilities): it runs those whose needs this covers.
    PROVIDES: FrozenSet[str] = frozenset()
    # habitat_baselines.distrib_preemption.policy: what "auto" means here.
    DEFAULT_PREEMPTION = "none"
    # The env pool training steps (a kind registered in
    # habitat_ver.system.env_pool), and the protocol its collection needs of
    # it; evaluation steps a lock-step pool (upstream's evaluator).
    ENV_POOL = LOCKSTEP
    ENV_POOL_NEEDS: type = VectorEnvPool
    # Run the envs of a built pool in this process (tests); set by tests only.
    serial_envs: bool = False
    # Whether this session logged an update's text lines yet (the first
    # update's are, whatever log_interval says).
    _update_lines_logged = False

    def __init__(self, config: Any = None):
        config = self.adapt_config(config)
        # Missing habitat-sim or data (a ConfigError), a bad value: one line
        # and exit 2 under habitat_baselines.run; raised to any other caller.
        with usage_errors_exit((ConfigError, HabitatSimRequiredError)):
            validate(config)
        super().__init__(config)
        if (
            self.config.habitat_baselines.force_torch_single_threaded
            or not torch.cuda.is_available()  # get_device's CPU case, without its set_device
        ):
            # On the CPU the env workers need the cores, so collection runs
            # torch on one thread whatever the config says (upstream's key
            # defaults to False, and its execute_exp applies it only with
            # CUDA): with every core's worth of threads, inference's OpenMP
            # workers spin beside the env workers.  Lock-step updates take the
            # idle cores back (self._scheduler).
            torch.set_num_threads(1)
        # The preemption rule (habitat_ver.distributed.preemption_rule); set
        # up with the process group by _init_preemption.
        self._preemption: PreemptionRule = NoPreemption()
        self.last_summary: Optional[RunSummary] = None
        # This session's logged reward and steps/s ({tag: [[step, value], ...]}).
        self.curve_points: Dict[str, List[List[float]]] = {}
        # Multi-rank: a stop signal on any rank, agreed in the last all-reduce.
        self._stop_agreed = False
        self._collect_seconds = 0.0  # of the rollout being learnt
        # The cores the run left unused meanwhile.
        self._collect_spare = SpareCores(self._worker_pids)
        self._learn_seconds = 0.0  # of the last update
        # The scheduling heuristics, asked at the loop's phase boundaries.
        self._scheduler = Scheduler(learner_num_threads(self.config))
        # Evaluation: the config the checkpoint is evaluated with (set by
        # _init_envs, read once by _create_agent).
        self._eval_config: Any = None

    @property
    def agent(self) -> Any:
        """The run's agent (upstream's ``_agent``, built by ``_init_train``):
        its policy (``actor_critic``), ``updater`` and ``rollouts``."""
        return self._agent

    # ----------------------------------------------------------------- hooks
    @classmethod
    def adapt_config(cls, config: Any) -> Any:
        """Hook: ``config`` with the upstream classes it names that this
        trainer cannot run replaced by ours (:mod:`habitat_ver.config.upstream`),
        and without the cameras its policy does not read
        (:mod:`habitat_ver.config.unread_cameras`); a skill config's recipe
        resolved and logged (:mod:`habitat_ver.config.hab_profile`)."""
        return without_unread_cameras(use_our_env_factory(resolved_profile(config)))

    def _init_envs(self, config: Any = None, is_eval: bool = False) -> None:
        """The env pool of kind ``ENV_POOL`` (evaluation: ``lockstep``),
        built by its registered builder or by upstream's set-up."""
        # Evaluation may run a checkpoint's config, written by upstream.
        config = self.config if config is None else config
        if is_eval:
            config = envs_for_episodes(config)
            kind = env_pool_kind(LOCKSTEP, needs=VectorEnvPool)
        else:
            self._use_rank_devices(config)
            kind = env_pool_kind(self.ENV_POOL, needs=self.ENV_POOL_NEEDS)
        if kind.build is not None:
            self._use_env_workers(kind.build(pool_setup(config, self.serial_envs)))
            return
        # Envs built in this process (a single-env habitat VectorEnv's worker
        # thread) need the habitat-sim aliases too, not only the env workers.
        bridge_sim_api()
        super()._init_envs(use_our_env_factory(config), is_eval)
        if is_eval:
            self._eval_config = config
            self._check_video_has_images()
            self._size_for_built_envs(config)

    def _use_rank_devices(self, config: Any) -> None:
        """Hook: a multi-rank run renders and learns on this rank's devices
        (:mod:`habitat_ver.distributed.rank_devices`), not on the local rank's
        GPU that upstream's ``_init_train`` sets before building the envs."""
        if not self._is_distributed:
            return
        local_rank = get_distrib_size()[0]
        logger.info(use_rank_devices(config, local_rank, torch.distributed.get_rank()))

    def _size_for_built_envs(self, config: Any) -> None:
        """Evaluation keeps one env per scene (the factory builds fewer envs
        than configured when scenes are few, and warns), and evaluates with
        the checkpoint's config by default (its own env count): both configs
        that size things per env then say how many envs were built.  The
        policy is built from ``config`` (upstream's ``HierarchicalPolicy``
        sizes its planner from it), upstream's evaluator its hidden states,
        previous actions and masks from ``self.config``."""
        for sized in (config, self.config):
            if sized.habitat_baselines.num_environments != self.envs.num_envs:
                with read_write(sized):
                    sized.habitat_baselines.num_environments = self.envs.num_envs

    def _check_video_has_images(self) -> None:
        """A video is drawn from the image observations (upstream asserts
        deep in its evaluator when there are none).  The run's own config
        asks for it, as in upstream's evaluator, not the checkpoint's."""
        video_option = list(self.config.habitat_baselines.eval.video_option)
        assert self._env_spec is not None, "_init_envs sets the env spec"
        spaces = self._env_spec.observation_space.spaces
        if not video_option or any(len(space.shape) > 1 for space in spaces.values()):
            return
        self.envs.close()
        observed = {key: tuple(space.shape) for key, space in spaces.items()}
        raise ConfigError(
            f"habitat_baselines.eval.video_option={video_option} is not allowed: a video "
            f"needs an image observation, and this env's observations are {observed}; "
            "set habitat_baselines.eval.video_option=[] (on a habitat task, or add a camera "
            "with habitat_baselines.eval.extra_sim_sensors)"
        )

    def _use_env_workers(self, pool: SharedBufferPool) -> None:
        """Train on ``pool`` (a registered builder's) instead of upstream's
        vector env, with the attributes upstream's ``_init_envs`` sets."""
        upstream_private.adopt_env_pool(self, pool)

    def eval(self) -> None:
        """Upstream's evaluation of one checkpoint file; a folder's checkpoints
        in order, to the one its run ended with (:mod:`.eval_folder`)."""
        with usage_errors_exit(RUN_ERRORS), log_files_closed(), upstream_config_dump_dropped():
            with self._log_to_file():
                self._eval()

    @contextlib.contextmanager
    def _log_to_file(self) -> Iterator[None]:
        """Evaluation writes ``habitat_baselines.log_file`` too (upstream opens
        it only for training), so its "Average episode ..." lines can be read
        back, e.g. by :mod:`habitat_ver.tools.hab_stage_report`; one
        evaluation at a time (:class:`LogFileLock`)."""
        log_file = self.config.habitat_baselines.log_file
        if not log_file:
            yield
            return
        with LogFileLock(log_file):
            logger.add_filehandler(log_file)
            yield

    def _eval(self) -> None:
        baselines = self.config.habitat_baselines
        folder = baselines.eval_ckpt_path_dir
        if not (baselines.eval.should_load_ckpt and os.path.isdir(folder)):
            super().eval()
            return
        self._add_preemption_signal_handlers()  # SLURM only, as upstream's eval
        self.device = get_device(self.config)
        with get_writer(self.config, flush_secs=self.flush_secs) as writer:

            def evaluate(path: str, index: int) -> Dict[str, Any]:
                logger.info(f"evaluating {path}")
                self._eval_checkpoint(path, writer, checkpoint_index=index)
                return self.load_checkpoint(path).get("extra_state", {})

            evaluate_folder(folder, evaluate, baselines.num_checkpoints)

    def _create_agent(self, resume_state: Any, **kwargs: Any) -> Any:
        """Evaluation builds the policy (and its observation transforms) from
        the config the checkpoint is evaluated with: with upstream's default
        ``load_resume_state_config=True`` that is the checkpoint's own, so a
        run trained with another policy or size evaluates without repeating
        those overrides (upstream built it from the command line's config and
        failed to load the weights)."""
        eval_config, self._eval_config = self._eval_config, None
        if eval_config is None:
            return super()._create_agent(resume_state, **kwargs)
        self._log_evaluation_start(eval_config)
        current, self.config = self.config, eval_config
        try:
            return super()._create_agent(resume_state, **kwargs)
        finally:
            self.config = current

    def _log_evaluation_start(self, eval_config: Any) -> None:
        """The evaluation's config to a file, and the line that opens its
        results in the log (:mod:`.eval_header`): checkpoint and episodes."""
        write_config_file(eval_config, evaluation=True)
        # Upstream's vector env (evaluation) counts each env's episodes.
        episodes = planned_episodes(eval_config, getattr(self.envs, "number_of_episodes", []))
        logger.info(header_line(evaluated_checkpoint(eval_config, self._evaluating), episodes))

    # ------------------------------------------------------------- the loop
    def _init_train(self, resume_state: Optional[Dict[str, Any]] = None) -> None:
        # Every rank opens the log file, but upstream creates folders on rank 0
        # only: a fast rank 1 would crash on a missing folder.
        log_folder = os.path.dirname(os.path.abspath(self.config.habitat_baselines.log_file))
        os.makedirs(log_folder, exist_ok=True)
        if self._is_distributed:
            backend_line = rank_backend(self.config)
            if backend_line:
                logger.info(backend_line)
        with upstream_config_dump_dropped():  # a file instead (config_file)
            super()._init_train(resume_state)
        if rank0_only():
            write_config_file(self.config)
        self._init_return_estimator()

    def return_estimator(self) -> str:
        """``habitat_baselines.returns.estimator``, ``auto`` resolved."""
        chosen = section_or_default(self.config, "returns", ReturnsConfig).estimator
        return resolve_return_estimator(chosen, self.PROVIDES)

    def _init_return_estimator(self) -> None:
        """Gives the run's return estimator to the updater as its targets
        step.  An updater without one (upstream's ``PPO``, ``HRLPPO``) reads
        returns from the storage: our storage gets the same step instead and
        runs it in ``compute_returns``, which upstream's loop calls before
        the update (:class:`~habitat_ver.storage.return_steps.StepsForReturns`)."""
        targets = build_return_estimator(self.return_estimator(), self.config)
        updater, rollouts = self._agent.updater, self._agent.rollouts
        if isinstance(updater, PPOUpdater):
            updater.use_targets(targets)
        elif isinstance(targets, RolloutTargets) and isinstance(rollouts, StepsForReturns):
            rollouts.returns_for_readers = targets

    def preemption_policy(self) -> str:
        """``habitat_baselines.distrib_preemption.policy``, "auto" resolved (checked
        at start by the rule registry's ``check_preemption_policy``)."""
        chosen = section_or_default(
            self.config, "distrib_preemption", DistribPreemptionConfig
        ).policy
        return self.DEFAULT_PREEMPTION if chosen == AUTO else chosen

    def _init_preemption(self) -> None:
        """Builds this rank's preemption rule (a single rank: store None)."""
        distributed = self._is_distributed
        setup = PreemptionSetup(
            store=self.num_rollouts_done_store if distributed else None,
            rank=torch.distributed.get_rank() if distributed else 0,
            world_size=torch.distributed.get_world_size() if distributed else 1,
            envs_per_rank=self.envs.num_envs,
            num_steps=int(self.config.habitat_baselines.rl.ppo.num_steps),
            sync_frac=float(self.config.habitat_baselines.rl.ddppo.sync_frac),
            short_rollout_fraction=float(self.SHORT_ROLLOUT_THRESHOLD),
        )
        self._preemption = build_preemption_rule(self.preemption_policy(), setup)

    def collect_rollout(self) -> int:
        """Hook, the first phase of an update: collect one rollout; returns the
        env steps collected."""
        raise NotImplementedError

    def _coalesce_post_step(
        self, losses: Dict[str, float], count_steps_delta: int
    ) -> Dict[str, float]:
        """Upstream's per-update all-reduce, carrying each rank's stop request."""
        if not self._is_distributed:
            return super()._coalesce_post_step(losses, count_steps_delta)
        agree_on_episode_stat_keys(self.running_episode_stats)
        losses = dict(losses, **{requeue.STOP_KEY: float(stop_signals.stop_requested_locally())})
        losses = super()._coalesce_post_step(losses, count_steps_delta)
        self._stop_agreed = losses.pop(requeue.STOP_KEY) > 0
        return losses

    def _stop_requested(self) -> bool:
        """Stop now? Multi-rank: only as agreed by every rank."""
        if self._is_distributed:
            return self._stop_agreed
        return stop_signals.stop_requested_locally()

    def _agent_with_own_storage(self, manager_cls: Any, resume_state: Any, **kwargs: Any) -> Any:
        """Hook helper for ``_create_agent``: an agent manager of ``manager_cls``
        (an upstream ``SingleAgentAccessMgr`` subclass that builds our storage)
        on the training envs, as upstream's ``_create_agent`` builds its own."""
        self._create_obs_transforms()
        assert self._env_spec is not None, "_init_envs sets the env spec"
        return manager_cls(
            config=self.config,
            env_spec=self._env_spec,
            is_distrib=self._is_distributed,
            device=self.device,
            resume_state=resume_state,
            num_envs=self.envs.num_envs,
            percent_done_fn=self.percent_done,
            **kwargs,
        )

    def _envs_idle_while_learning(self) -> bool:
        """Hook: whether no env steps during this update (lock-step), so that
        the learner may use the idle cores (:mod:`habitat_ver.system.scheduling`)."""
        return False

    def learn(self, steps: int) -> Dict[str, float]:
        """The second phase: one update on the rollout of ``steps`` env steps
        (with the learner threads the scheduler gives it); returns the losses
        and metrics to log."""
        start = time.monotonic()
        with self._scheduler.learning(self._envs_idle_while_learning(), self.device):
            losses = self._update_agent()
        losses[LEARN_SECONDS] = time.monotonic() - start
        self._learn_seconds = losses[LEARN_SECONDS]
        # After the timing: the rule's store reads are not learning.
        losses.update(self._preemption.end_update(self.num_updates_done))
        losses[LEARNER_THREADS] = float(self._scheduler.last_threads)
        losses[COLLECT_SECONDS] = self._collect_seconds
        if self._collect_spare.last is not None:
            losses[COLLECT_SPARE_CORES] = self._collect_spare.last
        self._after_learning()
        self.num_updates_done += 1
        return self._coalesce_post_step(losses, steps)

    def _after_learning(self) -> None:
        """Hook: runs after each update's learning, before the all-reduce."""

    def _worker_pids(self) -> List[int]:
        """The env worker processes whose CPU counts as the run's (none
        where the env pool does not say)."""
        pids = getattr(self.envs, "worker_pids", None)
        return list(pids()) if pids is not None else []

    def window_reward(self) -> Optional[float]:
        """Mean return of the episodes finished within the reward window."""
        return window_mean_reward(self.window_episode_stats)

    def _progress_position(self) -> float:
        if self.config.habitat_baselines.total_num_steps != -1:
            return self.num_steps_done
        return self.num_updates_done

    @rank0_only
    def _training_log(self, writer: Any, losses: Dict[str, float], prev_time: int = 0) -> None:
        """Our log vocabulary (:mod:`habitat_ver.common.log_keys`), not upstream's."""
        write_training_log(self, writer, losses, self._sps(), not self._update_lines_logged)
        self._update_lines_logged = True

    def _sps(self) -> float:
        elapsed = (time.time() - self.t_start) + self._prev_time
        return self.num_steps_done / max(elapsed, 1e-9)

    def train(self) -> None:
        """Train until the step/update budget is spent (or a stop signal, or the
        loss of the torchrun agent that launched this rank).

        Signal handlers and upstream's stop events are left as they were found;
        the checkpoint folder is this run's alone meanwhile (:func:`checkpoint_folder_owned`).
        """
        with interrupt_exits(self._interrupted_where), peer_loss_exits(self._stopped_where):
            with usage_errors_exit(RUN_ERRORS), log_files_closed():
                # Before anything is read or started: a second run on the folder
                # is refused here.
                with checkpoint_folder_owned(self.config):
                    with stop_signals.stop_handling(), stop_signals.stop_when_launcher_dies():
                        self._train()

    def _interrupted_where(self) -> str:
        folder = self.config.habitat_baselines.checkpoint_folder
        return f"at step {int(self.num_steps_done)} (resume state in {folder})"

    def _stopped_where(self) -> str:
        return f"{self._interrupted_where()}, losing the steps since that state"

    def _train(self) -> None:
        resume_state = self._resume_files().load()
        if resume_state is not None:
            check_same_run(resume_state["config"], self.config)
            check_resume_wanted(self.config)
        # A stop signal during start-up stops at the first safe point (the
        # default action of SIGUSR1 and SIGUSR2 would end the process).
        stop_signals.install_stop_handlers()
        with self._envs_closed_on_error():
            self._init_train(resume_state)
            stop_signals.install_stop_handlers()  # again: upstream's (SLURM only) replace them
            self._init_preemption()
            if self._is_distributed:
                torch.distributed.barrier()
            if resume_state is not None:
                self._restore(resume_state)
            writer_context = (
                get_writer(
                    self.config,
                    resume_run_id=self._run_id,
                    flush_secs=self.flush_secs,
                    # Hide what a stopped run logged after its resume state;
                    # steps >= purge_step go, so the state's own step stays
                    # (upstream's num_steps_done hid it for good).
                    purge_step=int(self.num_steps_done) + 1,
                )
                if rank0_only()
                else contextlib.nullcontext()
            )
            progress = progress_bar(
                self.config,
                self._progress_position(),
                enabled=rank0_only(),
                settings=section_or_default(self.config, "progress", ProgressConfig),
            )
        stopped = False
        try:
            with writer_context as writer:
                if writer is not None:
                    self._run_id = writer.get_run_id()
                    writer = CurveRecorder(
                        writer, self.curve_points, lambda: self.window_reward() is not None
                    )
                stopped = self._train_loop(writer, progress)
        finally:
            progress.close()
            self.envs.close()
        self._finish(stopped)

    @contextlib.contextmanager
    def _envs_closed_on_error(self) -> Iterator[None]:
        """Set-up after the env workers started (agent, optimizer, stores) may
        raise: shut the workers down before the error leaves ``train()``, or
        the interpreter's exit waits for them forever (they ignore SIGTERM)."""
        try:
            yield
        except BaseException:
            if self.envs is not None:
                self.envs.close()
            raise

    def _train_loop(self, writer: Any, progress: RunProgress) -> bool:
        """Returns True when a stop signal ended the run early."""
        if self._resume_state_update is None:
            # A state before the first checkpoint: a kill between writing
            # ckpt.0 and its resume state then restarts the run, where the
            # checkpoint without a state read as another run's and was refused.
            self._save_resume_state()
        while not self.is_done():
            self._agent.pre_rollout()
            if self._should_save_resume_state():
                self._save_resume_state()
            if self._stop_requested():
                self._save_resume_state()
                requeue.requeue()
                return True
            start = time.monotonic()
            self._collect_spare.start()
            steps = self.collect_rollout()
            self._collect_seconds = time.monotonic() - start
            self._collect_spare.stop()
            losses = self.learn(steps)
            self._training_log(writer, losses, self._prev_time)
            self._maybe_checkpoint()
            progress.update(self._progress_position(), self._sps(), self.window_reward())
        self._maybe_checkpoint(final=True)
        self._save_resume_state()  # a no-op when the final checkpoint just saved it
        return False

    def _finish(self, stopped: bool) -> None:
        if not rank0_only():
            return
        baselines = self.config.habitat_baselines
        self.last_summary = RunSummary(
            steps=int(self.num_steps_done),
            updates=int(self.num_updates_done),
            seconds=(time.time() - self.t_start) + self._prev_time,
            mean_sps=self._sps(),
            final_reward=self.window_reward(),
            checkpoint_folder=baselines.checkpoint_folder,
            tensorboard_dir=baselines.tensorboard_dir,
            log_file=baselines.log_file,
            stopped_early=stopped,
            learning_curve=write_curve_png(
                self.curve_points, curve_path(run_folder(baselines)), self._run_title()
            ),
        )
        print(self.last_summary.render(), flush=True)

    def _run_title(self) -> str:
        return run_title(self.config)
