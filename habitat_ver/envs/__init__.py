"""Embedded environments, registered in gym's registry at import.

habitat's ``GymRegistryEnv`` reaches them with
``habitat.env_task_gym_dependencies: [habitat_ver.envs]`` and
``habitat.env_task_gym_id: habitat_ver/DoomMyWayHome-v0`` (see README.md here).
"""

from gym.envs.registration import register, registry

from habitat_ver.config.embedded_env import DOOM_IDS

DOOM_ENTRY_POINT = "habitat_ver.envs.doom:DoomEnv"
__all__ = ["DOOM_ENTRY_POINT", "DOOM_IDS"]


def _register_doom() -> None:
    for gym_id, scenario in DOOM_IDS.items():
        if gym_id not in registry.env_specs:
            register(id=gym_id, entry_point=DOOM_ENTRY_POINT, kwargs={"scenario": scenario})


_register_doom()
