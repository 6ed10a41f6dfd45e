"""The Place skill of TP-SRL with a habitat-ver policy (``VERPlaceSkill``).

Upstream's ``PlaceSkillPolicy`` behaviour (done when released with the arm
at rest; never re-grasps), built by :class:`~habitat_ver.skills.loading.VERSkillLoader`.
"""

from habitat_baselines.rl.hrl.skills.place import PlaceSkillPolicy

from habitat_ver.skills.loading import VERSkillLoader


class VERPlaceSkill(VERSkillLoader, PlaceSkillPolicy):
    """Place skill loading a ``VERPolicy`` (or any registered policy) checkpoint."""
