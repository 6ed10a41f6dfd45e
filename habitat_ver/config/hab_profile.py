"""The skill configs' two recipes: the paper's (GPU) and one that fits a CPU.

``rearrange/ver_<skill>`` is the VER paper's recipe: 16 envs, the depth ResNet
on 128x128 head depth, LSTM 512, 500M steps.  On a CPU that is about one step
a second.  Each key that differs reads its value through the resolver
``${habitat_ver_profile:${hab_profile},PAPER,CPU}``, and the top-level key
``hab_profile`` picks the column:

* ``auto`` (the default): ``cpu`` where CUDA sees no GPU, else ``paper``;
* ``paper``: the paper's recipe, whatever the machine;
* ``cpu``: a state-only policy (the policy reads no camera, so none is
  rendered: :mod:`habitat_ver.config.unread_cameras`), fewer envs, a narrower
  LSTM and a budget of steps a CPU gets through.

A key given on the command line wins over both columns.
"""

from typing import Any, Optional

from habitat.config import read_write
from omegaconf import OmegaConf

from habitat_ver.common.log_once import log_once
from habitat_ver.config.errors import ConfigError

PROFILE_KEY = "hab_profile"
PROFILE_RESOLVER = "habitat_ver_profile"
PROFILES = ("auto", "paper", "cpu")


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def profile_in_effect(profile: str) -> str:
    """``paper`` or ``cpu`` for a ``hab_profile`` value.

    Raises:
        ConfigError: ``profile`` is not one of :data:`PROFILES`.
    """
    if profile not in PROFILES:
        raise ConfigError(
            f"{PROFILE_KEY}={profile!r} is not allowed; allowed: {', '.join(PROFILES)} "
            "(auto: cpu where CUDA sees no GPU, else paper)"
        )
    if profile == "auto":
        return "paper" if cuda_available() else "cpu"
    return profile


def profile_value(profile: str, paper: Any, cpu: Any) -> Any:
    """The resolver: ``paper`` or ``cpu`` by the profile in effect."""
    return paper if profile_in_effect(str(profile)) == "paper" else cpu


def profile_of(config: Any) -> Optional[str]:
    """The config's ``hab_profile`` as written (``auto``, ``paper``, ``cpu``),
    or None for a config without one."""
    profile = OmegaConf.select(config, PROFILE_KEY, default=None)
    return None if profile is None else str(profile)


def register_profile_resolver() -> None:
    if not OmegaConf.has_resolver(PROFILE_RESOLVER):
        OmegaConf.register_new_resolver(PROFILE_RESOLVER, profile_value)


def resolved_profile(config: Any) -> Any:
    """``config`` with its profile's values filled in (a resolved copy), the
    recipe logged once; ``config`` itself when it has no ``hab_profile``.

    habitat-lab reads some sections detached from the whole config (a
    measure's config inside an env worker), where ``${hab_profile}`` no
    longer resolves, so the values are written in before any env starts.
    """
    profile = profile_of(config)
    if profile is None:
        return config
    in_effect = profile_in_effect(profile)
    config = config.copy()
    with read_write(config):
        OmegaConf.resolve(config)
    baselines = config.habitat_baselines
    if in_effect == "cpu":
        why = "CUDA sees no GPU" if profile == "auto" else f"{PROFILE_KEY}=cpu"
        what = (
            "state-only skills, LSTM "
            if baselines.evaluate
            else f"{baselines.num_environments} envs, state-only policy, no camera rendered, "
            f"{baselines.total_num_steps:.0f} steps, LSTM "
        )
        log_once(
            f"{why}: CPU profile ({what}{baselines.rl.ppo.hidden_size}); "
            f"{PROFILE_KEY}=paper runs the paper's recipe"
        )
    elif profile == "auto":
        log_once(
            f"CUDA sees a GPU: the paper's recipe ({baselines.num_environments} envs, "
            f"depth ResNet); {PROFILE_KEY}=cpu runs the CPU profile"
        )
    return config
