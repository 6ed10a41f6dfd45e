"""habitat-ver's config schema: habitat-baselines' schema plus our sections.

``habitat_ver_config_base`` (group ``habitat_baselines``) extends upstream's
``habitat_baselines_rl_config_base`` with the sections our trainers and the
embedded environments read.  Upstream configs, which use upstream's base, still
run with our trainers: a missing section means its defaults
(:func:`section_or_default`).
"""

from dataclasses import dataclass, field
from typing import Any, Type, TypeVar

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from habitat_baselines.config.default_structured_configs import (
    HabitatBaselinesRLConfig,
)
from habitat_ver.common.checks import AUTO
from habitat_ver.config.appo import HabitatVerRLConfig
from habitat_ver.config.aux_losses import register_aux_loss_groups
from habitat_ver.config.embedded_env import EmbeddedEnvConfig
from habitat_ver.config.ver_policy import VERPolicyConfig

T = TypeVar("T")

# Default of habitat_baselines.env_workers.hang_warning_seconds.
DEFAULT_HANG_WARNING_S = 60.0


@dataclass
class ProgressConfig:
    """Console progress display of long runs (rank 0 only)."""

    # Show a progress bar with steps, steps/s and reward; off for plain logs.
    enabled: bool = True
    # Minimum seconds between two refreshes of the bar.
    refresh_seconds: float = 0.5


@dataclass
class VERSystemConfig:
    """How the `ver` trainer batches inference over ready environments."""

    # Wait for at least this fraction of the envs before running inference...
    min_batch_fraction: float = 0.25
    # ...but never longer than this, in milliseconds, after the first arrived.
    # 0 (the default): no wait; inference takes every result that arrived
    # while the last one ran (a wait did not collect faster on any workload
    # of docs/BENCHMARKS.md).
    max_wait_ms: float = 0.0


@dataclass
class EnvWorkersConfig:
    """How the trainers watch their env worker processes."""

    # Seconds one env step or reset may take before a warning names the env (> 0).
    hang_warning_seconds: float = DEFAULT_HANG_WARNING_S


@dataclass
class LearnerConfig:
    """The CPU learner's threads during lock-step updates (ddppo; ver without overlap)."""

    # "auto": the cores of this process's share that no other program's runnable
    # threads use, checked before every update, and one thread for a while after
    # a multi-threaded update was slower than one thread (system/scheduling.py);
    # an integer n >= 1: always n threads (1: never more than inference's one).
    num_threads: Any = AUTO


@dataclass
class DistribPreemptionConfig:
    """How a multi-rank run cuts the rollouts of slow ranks short."""

    # "auto" (ddppo: DD-PPO's sync_frac rule; ver: VER's estimated optimum),
    # "none" (every rank collects its whole rollout), "ddppo", "ver", or any
    # rule registered in habitat_ver.distributed.preemption_rule.
    policy: str = AUTO


@dataclass
class ReturnsConfig:
    """Where PPO's advantages and returns come from (the updater's targets step)."""

    # "auto" (ddppo, ver: gae; appo: vtrace), "gae" (rl.ppo.gamma, tau, use_gae),
    # "vtrace" (rl.appo.vtrace_*), or any estimator registered in habitat_ver.updaters.targets.
    estimator: str = AUTO


@dataclass
class HabitatVerBaselinesConfig(HabitatBaselinesRLConfig):
    """Upstream's RL schema plus habitat-ver's sections."""

    # Upstream's rl section plus rl.appo (the appo trainer's settings).
    rl: HabitatVerRLConfig = field(default_factory=HabitatVerRLConfig)

    # Embedded (sim-free) environments: resolution, scenario mix, stragglers.
    embedded_env: EmbeddedEnvConfig = field(default_factory=EmbeddedEnvConfig)
    # Progress bar settings.
    progress: ProgressConfig = field(default_factory=ProgressConfig)
    # Dynamic batching of the `ver` trainer's inference.
    ver_system: VERSystemConfig = field(default_factory=VERSystemConfig)
    # VERPolicy's encoder and embedding knobs (habitat_ver/config/ver_policy.py).
    ver_policy: VERPolicyConfig = field(default_factory=VERPolicyConfig)
    # Straggler preemption of multi-rank runs (DD-PPO's or VER's).
    distrib_preemption: DistribPreemptionConfig = field(default_factory=DistribPreemptionConfig)
    # Watching env workers: hung steps are reported.
    env_workers: EnvWorkersConfig = field(default_factory=EnvWorkersConfig)
    # Threads of the CPU learner's lock-step updates.
    learner: LearnerConfig = field(default_factory=LearnerConfig)
    # The return estimator (advantages and returns) of the PPO update.
    returns: ReturnsConfig = field(default_factory=ReturnsConfig)


def section_or_default(config: Any, key: str, schema: Type[T]) -> T:
    """``config.habitat_baselines.<key>``, or the schema's defaults if absent."""
    baselines = config.habitat_baselines
    if key in baselines:
        return baselines[key]
    return OmegaConf.structured(schema)


def hang_warning_seconds(config: Any) -> float:
    """``habitat_baselines.env_workers.hang_warning_seconds`` (or its default)."""
    return float(section_or_default(config, "env_workers", EnvWorkersConfig).hang_warning_seconds)


def learner_num_threads(config: Any) -> Any:
    """``habitat_baselines.learner.num_threads`` (or its default, ``auto``)."""
    return section_or_default(config, "learner", LearnerConfig).num_threads


# ``${habitat_ver_render_gpu:0}``: habitat-sim's gpu_device_id in our rearrange
# and HAB configs.
RENDER_GPU_RESOLVER = "habitat_ver_render_gpu"


def render_gpu(device: int = 0) -> int:
    """``device`` where CUDA sees a GPU, else -1 (habitat-sim renders on the CPU).

    habitat-sim picks its EGL device by CUDA id, so without a CUDA device a
    ``gpu_device_id`` of 0 fails in every env (``unable to find CUDA device 0``).
    """
    import torch

    return int(device) if torch.cuda.is_available() else -1


def register_configs() -> None:
    """Store our schema in Hydra's ConfigStore and our resolver in OmegaConf (idempotent)."""
    if not OmegaConf.has_resolver(RENDER_GPU_RESOLVER):
        OmegaConf.register_new_resolver(RENDER_GPU_RESOLVER, render_gpu)
    ConfigStore.instance().store(
        group="habitat_baselines",
        name="habitat_ver_config_base",
        node=HabitatVerBaselinesConfig,
    )
    register_aux_loss_groups()
