"""Skill and high-level policy classes by name, upstream's and ours together.

Upstream's ``HierarchicalPolicy`` turns ``skill_name`` and
``high_level_policy.name`` into classes with ``eval`` inside its own module,
so only classes imported there can be named.  These two registries hold
upstream's classes (every name in ``habitat_baselines.rl.hrl.skills`` and
``habitat_baselines.rl.hrl.hl``) plus habitat-ver's, and
:class:`~habitat_ver.skills.hierarchical_policy.VERHierarchicalPolicy` looks
names up here instead.
"""

from typing import Dict, List, Type


class NamedClassRegistry:
    """Name -> class, refusing to rebind a name to a different class.

    Args:
        kind: what the classes are, for error messages (``"skill"``).
        config_key: the config key that holds such names, for error messages.
    """

    def __init__(self, kind: str, config_key: str):
        self.kind = kind
        self.config_key = config_key
        self._classes: Dict[str, Type] = {}

    def register(self, name: str, cls: Type) -> None:
        existing = self._classes.get(name)
        if existing is not None and existing is not cls:
            raise ValueError(
                f"{self.kind} name {name!r} is already registered to "
                f"{existing.__module__}.{existing.__qualname__}; refusing to "
                f"rebind it to {cls.__module__}.{cls.__qualname__}"
            )
        self._classes[name] = cls

    def get(self, name: str) -> Type:
        _register_builtin()
        cls = self._classes.get(name)
        if cls is None:
            raise ValueError(
                f"{self.config_key}={name!r} is not a known {self.kind}; allowed: {self.names()}"
            )
        return cls

    def names(self) -> List[str]:
        _register_builtin()
        return sorted(self._classes)


SKILLS = NamedClassRegistry(
    "skill",
    "habitat_baselines.rl.policy.<agent>.hierarchical_policy.defined_skills.<skill>.skill_name",
)
HIGH_LEVEL_POLICIES = NamedClassRegistry(
    "high-level policy",
    "habitat_baselines.rl.policy.<agent>.hierarchical_policy.high_level_policy.name",
)

_BUILTIN_DONE = False


def _register_builtin() -> None:
    """Upstream's skills and planners, then ours (idempotent, on first use)."""
    global _BUILTIN_DONE
    if _BUILTIN_DONE:
        return
    _BUILTIN_DONE = True
    import habitat_baselines.rl.hrl.hl as upstream_hl
    import habitat_baselines.rl.hrl.skills as upstream_skills

    from habitat_ver.skills.art_obj import VERArtObjSkill
    from habitat_ver.skills.fixed_planner import VERFixedHighLevelPolicy
    from habitat_ver.skills.nav import VERNavSkill
    from habitat_ver.skills.pick import VERPickSkill
    from habitat_ver.skills.place import VERPlaceSkill

    for name in upstream_skills.__all__:
        SKILLS.register(name, getattr(upstream_skills, name))
    for name in upstream_hl.__all__:
        HIGH_LEVEL_POLICIES.register(name, getattr(upstream_hl, name))
    for cls in (VERPickSkill, VERPlaceSkill, VERArtObjSkill, VERNavSkill):
        SKILLS.register(cls.__name__, cls)
    HIGH_LEVEL_POLICIES.register(VERFixedHighLevelPolicy.__name__, VERFixedHighLevelPolicy)
