"""The learning curve of a run: return and steps/s against steps, as a PNG.

The points are exactly the values the trainer logs to TensorBoard (``reward``
and ``system/sps`` at ``num_steps_done``): :class:`CurveRecorder` wraps the
writer and keeps a copy of those scalars as they pass.  At the end of a run
the curve is drawn and written atomically; the points are also stored in the
PNG's text metadata (key :data:`METADATA_KEY`, JSON) so a reader can check what
was plotted without parsing pixels, and so is the title (:data:`TITLE_KEY`):
the config name, trainer and task (:func:`run_title`).
"""

import json
import os
from typing import Any, Callable, Dict, List, Optional

from habitat_ver.common.atomic import write_atomically
from habitat_ver.common.log_keys import SPS

# TensorBoard scalar names the trainers' training log writes (common/log_keys.py).
REWARD_TAG = "reward"
SPS_TAG = SPS
METADATA_KEY = "habitat_ver_curve"
# PNG's own text key for the title (the figure's title, readable without pixels).
TITLE_KEY = "Title"
FILE_NAME = "learning_curve.png"


class CurveRecorder:
    """A TensorBoard writer proxy that records the reward and steps/s scalars.

    Args:
        writer: the writer to forward every call to.
        points: where the recorded ``{tag: [[step, value], ...]}`` go; shared
            so the trainer keeps them after the writer is closed.
        has_episodes: whether any episode has finished yet; before that the
            logged reward is a placeholder 0 (upstream divides by max(count, 1))
            and is left off the curve.
    """

    def __init__(
        self,
        writer: Any,
        points: Dict[str, List[List[float]]],
        has_episodes: Callable[[], bool] = lambda: True,
    ):
        self._writer = writer
        self.points = points
        self._has_episodes = has_episodes

    def add_scalar(self, tag: str, value: Any, step: Any = None, *args: Any, **kwargs: Any) -> Any:
        keep = tag == SPS_TAG or (tag == REWARD_TAG and self._has_episodes())
        if keep and step is not None:
            self.points.setdefault(tag, []).append([float(step), float(value)])
        return self._writer.add_scalar(tag, value, step, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)


def run_title(config: Any, config_name: Optional[str] = None) -> str:
    """What a run is, for its curve: ``<config name>: <trainer> on <task>``.

    Args:
        config: the run's config.
        config_name: the ``--config-name`` it was composed from (default:
            Hydra's, when the run was started by a Hydra command line).

    The task is the gym id for ``GymRegistryEnv`` runs, else habitat-lab's
    task type (``RearrangePickTask-v0``), with the dataset's name where there
    is one; the title said only "ver on GymHabitatEnv" for every habitat task.
    """
    habitat = config.habitat
    task = habitat.env_task_gym_id or habitat.get("task", {}).get("type") or habitat.env_task
    data_path = str(habitat.get("dataset", {}).get("data_path") or "")
    if not habitat.env_task_gym_id and data_path:
        task += f" ({_dataset_name(data_path)})"
    title = f"{config.habitat_baselines.trainer_name} on {task}"
    name = config_name if config_name is not None else hydra_config_name()
    return f"{name}: {title}" if name else title


def hydra_config_name() -> Optional[str]:
    """The ``--config-name`` of the Hydra command line running, if any."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    return HydraConfig.get().job.config_name or None


def _dataset_name(data_path: str) -> str:
    """``data/datasets/hab_ver/v1/{split}/rearrange_easy.json.gz`` ->
    ``rearrange_easy``; habitat's PointNav layout ``.../{split}/{split}.json.gz``
    -> the dataset folder above ``v1``."""
    parts = data_path.replace("\\", "/").split("/")
    stem = parts[-1].split(".")[0]
    if stem != "{split}":
        return stem
    above = [p for p in parts[:-2] if p not in ("v1", "v2")]
    return above[-1] if above else stem


def curve_path(run_folder: str) -> str:
    """Where a run's curve goes: its output folder (``config_file.run_folder``)."""
    return os.path.join(run_folder, FILE_NAME)


def write_curve_png(points: Dict[str, List[List[float]]], path: str, title: str) -> Optional[str]:
    """Draw return and steps/s against steps; write ``path`` atomically.

    Args:
        points: ``{REWARD_TAG: [[step, return], ...], SPS_TAG: [[step, sps], ...]}``.
        path: the PNG to write (its folder is created).
        title: the figure title (e.g. the config name).

    Returns:
        ``path``, or None when there is no point to draw.
    """
    if not points.get(REWARD_TAG) and not points.get(SPS_TAG):
        return None
    import matplotlib

    matplotlib.use("Agg")  # no display on training machines
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7, 6), tight_layout=True)
    panels = figure.subplots(2, 1, sharex=True)
    for axis, tag, label in (
        (panels[0], REWARD_TAG, "mean episode return"),
        (panels[1], SPS_TAG, "steps/s"),
    ):
        series = points.get(tag, [])
        axis.plot([p[0] for p in series], [p[1] for p in series], marker=".")
        axis.set_ylabel(label)
        axis.grid(True, alpha=0.3)
    panels[1].set_xlabel("environment steps")
    panels[0].set_title(title)
    write_atomically(
        path,
        lambda out: figure.savefig(
            out,
            format="png",
            dpi=100,
            metadata={METADATA_KEY: json.dumps(points), TITLE_KEY: title},
        ),
    )
    return path


def read_curve_points(path: str) -> Dict[str, List[List[float]]]:
    """The points stored in a curve PNG written by :func:`write_curve_png`."""
    from PIL import Image

    with Image.open(path) as image:
        return json.loads(image.text[METADATA_KEY])
