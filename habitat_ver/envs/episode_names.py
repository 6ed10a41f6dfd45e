"""Episode names that tell the envs of a run apart, for habitat's evaluator.

habitat-baselines' evaluator keys each finished episode by ``(scene_id,
episode_id)`` and pauses an env once its current key has been evaluated.
A gym task has no dataset, so habitat's ``EnvCountEpisodeWrapper`` names every
env's episodes alike (``default``, then ``1``, ``3``, ...): all envs but the
first to finish were paused after one episode, and episodes that ended on the
same step counted as one, so evaluating several envs failed its own check
("Expected 8 episodes, got 3") or ran on a single env.
"""

from typing import Any

import gym
from habitat.core.dataset import Episode


class EpisodeNames(gym.Wrapper):
    """Names env ``env_index``'s episodes ``env<i>-<n>`` in scene ``scene_id``.

    ``n`` counts the env's resets from 1.  habitat's episode-count wrapper
    reads ``current_episode`` and ``number_of_episodes`` from here when they
    exist; ``-1`` episodes means "unknown", as for any gym task, so the
    evaluator runs ``habitat_baselines.test_episode_count`` episodes.
    """

    number_of_episodes = -1

    def __init__(self, env: gym.Env, scene_id: str, env_index: int):
        super().__init__(env)
        self._scene_id = scene_id
        self._env_index = env_index
        self._resets = 0

    def reset(self, **kwargs: Any) -> Any:
        self._resets += 1
        return self.env.reset(**kwargs)

    @property
    def current_episode(self) -> Episode:
        return Episode(
            episode_id=f"env{self._env_index}-{self._resets}",
            scene_id=self._scene_id,
            start_position=[],
            start_rotation=[],
        )

    @property
    def original_action_space(self) -> gym.Space:
        """The env's action space, as habitat's wrapper gives any gym task."""
        return self.action_space
