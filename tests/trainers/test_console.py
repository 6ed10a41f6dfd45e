"""What a run prints: its config in a file (one line naming it), an update line
after the first update whatever log_interval is, log lines never on the
progress bar's line, evaluations opened by their episode count, and a curve
titled with the config name and task."""

import io
import logging
import re

from habitat import logger as habitat_logger
from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf
from PIL import Image
from tqdm import tqdm

from habitat_ver.config.compose import get_config
from habitat_ver.run import execute_exp, main
from habitat_ver.tools.hab_stage_report import read_evaluations
from habitat_ver.trainers.learning_curve import TITLE_KEY, run_title
from habitat_ver.trainers.progress import log_lines_above_bar

from .conftest import run_overrides


def _overrides(out_dir, updates, log_interval):
    kept = [o for o in run_overrides(out_dir, updates) if "log_interval" not in o]
    return kept + [f"habitat_baselines.log_interval={log_interval}"]


class _Records(logging.Handler):
    """Every record habitat's logger hands its handlers (console and file)."""

    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def _logged(run):
    records = _Records()
    habitat_logger.addHandler(records)
    try:
        run()
    finally:
        habitat_logger.removeHandler(records)
    return records.messages


def test_the_config_goes_to_a_file_and_the_first_update_is_logged(out_dir):
    overrides = _overrides(out_dir, 2, log_interval=10) + ["habitat_baselines.verbose=True"]
    messages = _logged(lambda: execute_exp(get_config("gym/ddppo_cartpole", overrides), "train"))
    path = out_dir / "config.yaml"
    saved = OmegaConf.load(path)
    assert saved.habitat_baselines.trainer_name == "ddppo"
    assert saved.habitat_baselines.num_updates == 2
    assert f"habitat_ver: the run's config is in {path}" in messages
    # Upstream's dump (habitat_baselines.verbose=True): ~100 lines here, ~450
    # for a HAB skill; a real run's console is counted in tests/hab.
    assert not [m for m in messages if m.startswith("config: ")]
    log = (out_dir / "train.log").read_text()
    # log_interval=10 and 2 updates: update 1 is logged all the same.
    assert re.findall(r"update: (\d+)\tsteps:", log) == ["1"]


def test_a_log_file_named_without_a_folder_leaves_the_working_folder_alone(
    out_dir, tmp_path, monkeypatch
):
    # habitat-baselines' default log file is "train.log", written where the
    # run starts (its tests and notebooks start runs through execute_exp):
    # the config and the curve go to the checkpoint folder, not beside it.
    started_in = tmp_path / "started_here"
    started_in.mkdir()
    monkeypatch.chdir(started_in)
    overrides = run_overrides(out_dir, 2) + ["habitat_baselines.log_file=train.log"]
    execute_exp(get_config("gym/ddppo_cartpole", overrides), "train")
    assert sorted(p.name for p in started_in.iterdir()) == ["train.log"]
    folder = out_dir / "checkpoints"
    assert OmegaConf.load(folder / "config.yaml").habitat_baselines.num_updates == 2
    assert (folder / "learning_curve.png").stat().st_size > 0


def test_an_evaluation_writes_its_config_and_says_how_many_episodes(out_dir):
    execute_exp(get_config("gym/ddppo_cartpole", run_overrides(out_dir, 1)), "train")
    latest = out_dir / "checkpoints" / "latest.pth"
    eval_overrides = run_overrides(out_dir) + [
        f"habitat_baselines.eval_ckpt_path_dir={latest}",
        "habitat_baselines.evaluate=True",
        "habitat_baselines.test_episode_count=3",
        "habitat_baselines.verbose=True",
    ]
    messages = _logged(
        lambda: execute_exp(get_config("gym/ddppo_cartpole", eval_overrides), "eval")
    )
    assert OmegaConf.load(out_dir / "eval_config.yaml").habitat_baselines.evaluate is True
    assert not [m for m in messages if m.startswith("env config: ")]
    assert f"habitat_ver: the evaluation's config is in {out_dir / 'eval_config.yaml'}" in (
        messages
    )
    log = (out_dir / "train.log").read_text()
    assert f"habitat_ver: evaluating {latest} on 3 episode(s)\n" in log
    (evaluation,) = read_evaluations(str(out_dir / "train.log"))
    assert evaluation.episodes == 3 and "reward" in evaluation.metrics


def test_log_lines_are_written_above_the_bar():
    console = io.StringIO()
    log = logging.getLogger("habitat_ver.test_console")
    log.propagate = False
    log.addHandler(logging.StreamHandler(console))
    try:
        bar = tqdm(total=768, file=console, mininterval=0, ncols=60)
        bar.update(77)
        with log_lines_above_bar([log]):
            log.warning("habitat_ver: lock-step updates learn on 1 thread(s)")
            bar.update(77)
        bar.close()
        log.warning("after the bar")
    finally:
        log.handlers.clear()
    # What a terminal shows on each line: the text after its last carriage return.
    shown = [line.rsplit("\r", 1)[-1] for line in console.getvalue().split("\n")]
    assert "habitat_ver: lock-step updates learn on 1 thread(s)" in shown
    assert shown[-2:] == ["after the bar", ""]
    assert re.fullmatch(r" 20%\|.*\| 154/768 .*", shown[-3])  # the bar, drawn again


def test_the_title_names_the_config_and_the_task():
    pick = get_config("rearrange/ver_pick", ["hab_data=generated"])
    assert run_title(pick, "rearrange/ver_pick") == (
        "rearrange/ver_pick: ver on RearrangePickTask-v0 (rearrange_easy)"
    )
    tidy = get_config("hab/tidy_house")
    assert run_title(tidy, "hab/tidy_house") == (
        "hab/tidy_house: ddppo on RearrangePddlTask-v0 (tidy_house_10k_1k)"
    )
    assert run_title(get_config("pointnav/ver_simple_room"), "pointnav/ver_simple_room") == (
        "pointnav/ver_simple_room: ver on Nav-v0 (simple_room)"
    )


def test_the_command_lines_curve_is_titled_with_its_config_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run"
    try:
        main(["--config-name=gym/ddppo_cartpole", *run_overrides(out, 2)])
    finally:
        HydraConfig.instance().cfg = None  # later tests compose without Hydra's app
    with Image.open(out / "learning_curve.png") as image:
        assert image.text[TITLE_KEY] == "gym/ddppo_cartpole: ddppo on CartPole-v1"
