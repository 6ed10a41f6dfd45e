"""A habitat dataset with no episodes, for gym tasks (``GymRegistryEnv``).

habitat's env construction always makes a dataset of ``habitat.dataset.type``;
the default (``PointNav-v1``) reads episode files from disk, which a gym task
neither has nor needs.  Configs of the embedded environments set
``habitat.dataset.type: NoEpisodes-v0`` and ``content_scenes: [none]`` so both
our env factory and upstream's ``HabitatVectorEnvFactory`` build them.
"""

from typing import Any, List

from habitat.core.dataset import Dataset, Episode

DATASET_NAME = "NoEpisodes-v0"


class NoEpisodesDataset(Dataset[Episode]):
    """An empty episode list; every scene filter yields nothing."""

    def __init__(self, config: Any = None):
        self.episodes: List[Episode] = []

    @classmethod
    def get_scenes_to_load(cls, config: Any) -> List[str]:
        return []
