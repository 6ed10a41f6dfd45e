"""Open/close fridge and cabinet skills with a habitat-ver policy (``VERArtObjSkill``).

Upstream's ``ArtObjSkillPolicy`` behaviour (done once the arm left its start
zone and is back at rest with nothing held), built by
:class:`~habitat_ver.skills.loading.VERSkillLoader`.
"""

from habitat_baselines.rl.hrl.skills.art_obj import ArtObjSkillPolicy

from habitat_ver.skills.loading import VERSkillLoader


class VERArtObjSkill(VERSkillLoader, ArtObjSkillPolicy):
    """Articulated-object skill loading a ``VERPolicy`` checkpoint."""
