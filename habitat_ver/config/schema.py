"""habitat-ver's config schema: habitat-baselines' schema plus the registered sections.

``habitat_ver_config_base`` (group ``habitat_baselines``) extends upstream's
``habitat_baselines_rl_config_base`` with the sections our components read.
Each component declares its section next to its code and registers it
(:mod:`habitat_ver.common.settings_sections`, from
:mod:`habitat_ver.registration`); :func:`register_configs` composes the schema
from what is registered: :func:`baselines_schema` (``HabitatVerBaselinesConfig``)
and its ``rl`` section, :func:`rl_schema` (``HabitatVerRLConfig``).  Upstream
configs, which use upstream's base, still run with our trainers: a missing
section means its defaults (:func:`section_or_default`).
"""

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Tuple, Type, TypeVar

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from habitat_baselines.config.default_structured_configs import (
    HabitatBaselinesRLConfig,
    RLConfig,
)
from habitat_ver.common.settings_sections import settings_sections
from habitat_ver.config.aux_losses import register_aux_loss_groups
from habitat_ver.config.hab_profile import register_profile_resolver
from habitat_ver.config.run_folder import register_run_folder_resolver
from habitat_ver.config.shipped_skills import register_shipped_resolver

T = TypeVar("T")


@dataclass
class HabitatVerRLBase(RLConfig):
    """Upstream's ``rl`` section with ``rl.auxiliary_losses`` widened to any
    arguments; :func:`rl_schema` adds the registered ``rl.*`` sections and
    ``rl.max_nonfinite_rewards``."""

    # Upstream's auxiliary losses by registered name, each with its constructor
    # arguments (cpca: {loss_scale: 0.1}; habitat_ver/config/aux_losses.py).
    # Upstream types the values AuxLossConfig, a schema without fields, so
    # `+habitat_baselines.rl.auxiliary_losses.cpca.loss_scale=0.1` failed with
    # "dict is not a subclass of AuxLossConfig"; the names are checked at start.
    auxiliary_losses: Dict[str, Any] = field(default_factory=dict)


# Default of habitat_baselines.rl.max_nonfinite_rewards: NaN/inf rewards
# tolerated per run (ver, appo; each learnt as 0, counted in
# system/nonfinite_rewards) before the run fails naming the env, >= 0.
DEFAULT_MAX_NONFINITE_REWARDS = 100

# Our fields of habitat_baselines.rl after its registered sections.
_RL_FIELDS_AFTER_SECTIONS: List[Tuple[str, type, Any]] = [
    ("max_nonfinite_rewards", int, field(default=DEFAULT_MAX_NONFINITE_REWARDS)),
]

# The composed (rl, baselines) schemas by what they were built from: the
# same registered sections give the same classes again (pickled configs find
# their class by name, and it must be the one they were built with).
_Snapshot = Tuple[Tuple[Tuple[str, type], ...], Tuple[Tuple[str, type], ...]]
_composed: Dict[_Snapshot, Tuple[type, type]] = {}


def _section_fields(
    base: type, sections: Dict[str, type], where: str
) -> List[Tuple[str, type, Any]]:
    """(name, type, field) of each section; one that replaces a section of
    ``base`` must extend its dataclass (``rl.ver`` extends upstream's VERConfig)."""
    inherited = {f.name: f.type for f in dataclasses.fields(base)}
    found = []
    for name, schema in sections.items():
        replaced = inherited.get(name)
        if name in inherited and not (isinstance(replaced, type) and issubclass(schema, replaced)):
            upstream = getattr(replaced, "__qualname__", replaced)
            raise ValueError(
                f"settings section {where + name!r} ({schema.__qualname__}) replaces "
                f"upstream's {upstream}: it must extend that dataclass"
            )
        found.append((name, schema, field(default_factory=schema)))
    return found


def _named(cls: type, name: str) -> type:
    """``cls`` as ``habitat_ver.config.schema.<name>``, where pickled configs find it."""
    cls.__module__ = __name__
    cls.__qualname__ = name
    globals()[name] = cls
    return cls


def _compose() -> Tuple[type, type]:
    rl_sections = settings_sections("rl")
    sections = settings_sections()
    if "rl" in sections:
        raise ValueError("settings section 'rl' is not allowed: register 'rl.<name>' sections")
    snapshot: _Snapshot = (tuple(rl_sections.items()), tuple(sections.items()))
    if snapshot not in _composed:
        rl = dataclasses.make_dataclass(
            "HabitatVerRLConfig",
            _section_fields(HabitatVerRLBase, rl_sections, "rl.") + _RL_FIELDS_AFTER_SECTIONS,
            bases=(HabitatVerRLBase,),
        )
        rl.__doc__ = (
            "Upstream's ``rl`` section plus the registered ``rl.*`` sections and "
            "``rl.max_nonfinite_rewards``."
        )
        baselines = dataclasses.make_dataclass(
            "HabitatVerBaselinesConfig",
            [("rl", rl, field(default_factory=rl))]
            + _section_fields(HabitatBaselinesRLConfig, sections, ""),
            bases=(HabitatBaselinesRLConfig,),
        )
        baselines.__doc__ = "Upstream's RL schema plus the registered sections."
        _composed[snapshot] = (rl, baselines)
    rl, baselines = _composed[snapshot]
    return _named(rl, "HabitatVerRLConfig"), _named(baselines, "HabitatVerBaselinesConfig")


def rl_schema() -> type:
    """``HabitatVerRLConfig``: ``habitat_baselines.rl``'s schema, composed from
    the registered ``rl.*`` sections (the same class until they change).

    Raises:
        ValueError: a registered section replaces one of upstream's without
            extending its dataclass.
    """
    return _compose()[0]


def baselines_schema() -> type:
    """``HabitatVerBaselinesConfig``: ``habitat_baselines``' schema, composed
    from the registered sections (the same class until they change).

    Raises:
        ValueError: a registered section replaces one of upstream's without
            extending its dataclass, or is named ``rl``.
    """
    return _compose()[1]


def section_or_default(config: Any, key: str, schema: Type[T]) -> T:
    """``config.habitat_baselines.<key>``, or the schema's defaults if absent."""
    baselines = config.habitat_baselines
    if key in baselines:
        return baselines[key]
    return OmegaConf.structured(schema)


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
    """Store our schema, composed from the registered sections, in Hydra's
    ConfigStore and our resolvers in OmegaConf (idempotent; again after a
    section is registered, to store the new schema)."""
    if not OmegaConf.has_resolver(RENDER_GPU_RESOLVER):
        OmegaConf.register_new_resolver(RENDER_GPU_RESOLVER, render_gpu)
    register_profile_resolver()
    register_shipped_resolver()
    register_run_folder_resolver()
    ConfigStore.instance().store(
        group="habitat_baselines",
        name="habitat_ver_config_base",
        node=baselines_schema(),
    )
    register_aux_loss_groups()
