"""The Pick skill of TP-SRL with a habitat-ver policy (``VERPickSkill``).

Upstream's ``PickSkillPolicy`` behaviour (done when holding with the arm at
rest; never releases a held object), built by :class:`~habitat_ver.skills.loading.VERSkillLoader`.
Trained with base movement (``rearrange/ver_pick``) it can also navigate to
the object itself, which is what TP-SRL(NoNav) relies on (VER paper 6.2).
"""

from habitat_baselines.rl.hrl.skills.pick import PickSkillPolicy

from habitat_ver.skills.loading import VERSkillLoader


class VERPickSkill(VERSkillLoader, PickSkillPolicy):
    """Pick skill loading a ``VERPolicy`` (or any registered policy) checkpoint."""
