"""One log vocabulary for ddppo, ver and appo: TensorBoard tags and text lines."""

import re

import pytest

from habitat_ver.config.compose import get_config
from habitat_ver.run import execute_exp

from .conftest import run_overrides

# Every trainer writes these; upstream's names they replace must be gone.
COMMON = {
    "reward",
    "system/sps",
    "system/collect_seconds",
    "system/learn_seconds",
    "learner/loss/policy",
    "learner/loss/value",
    "learner/loss/entropy",
    "learner/loss/total",
    "learner/entropy_coef",
    "learner/grad_norm",
    "learner/clip_fraction",
    "learner/approx_kl",
    "learner/value_pred/mean",
    "learner/prob_ratio/max",
}
# Only some trainers have these (the data they describe).
OWN = {
    "ddppo": set(),
    "ver": {"system/nonfinite_rewards", "system/policy_lag/max", "learner/is_weight/mean"},
    "appo": {
        "system/nonfinite_rewards",
        "system/policy_lag/max",
        "system/dropped_trajectories",
        "learner/vtrace_rho_mean",
    },
}
EXTRA = {"appo": ["habitat_baselines.rl.appo.serial=True"]}


def _scalars(folder):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder))
    events.Reload()
    return {tag: [s.value for s in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


@pytest.mark.parametrize("trainer", ["ddppo", "ver", "appo"])
def test_scalars_are_namespaced_alike_in_tensorboard_and_the_text_log(out_dir, trainer):
    envs = 4 if trainer == "appo" else 2  # appo: 2 rollout workers x 2 env groups
    overrides = run_overrides(out_dir, 2, num_envs=envs) + EXTRA.get(trainer, [])
    done = execute_exp(get_config(f"gym/{trainer}_cartpole", overrides), "train")
    scalars = _scalars(out_dir / "tb")
    assert COMMON | OWN[trainer] <= set(scalars), sorted(set(scalars))
    for tag in scalars:
        assert tag == "reward" or tag.split("/")[0] in ("learner", "system", "metrics"), tag
    assert not any(t.startswith(("perf/", "learner/system/", "learner/diag/")) for t in scalars)
    assert all(v >= 0 for v in scalars["system/collect_seconds"] + scalars["system/learn_seconds"])
    # Steps/s is steps over the run's wall time: positive, one per update.
    assert len(scalars["system/sps"]) == 2 and min(scalars["system/sps"]) > 0
    text = (out_dir / "train.log").read_text()
    steps = [int(s) for s in re.findall(r"update: \d+\tsteps: (\d+)\tsystem/sps: [0-9.]+", text)]
    assert steps[-1] == done.num_steps_done and len(steps) == 2
    # Each namespace on lines of its own (continued within 300 characters).
    learner = re.search(r"\n\S+ \S+ learner/.*?(?=\n\S+ \S+ system/)", text, re.S)
    assert learner and "learner/loss/policy: " in learner[0] and "learner/grad_norm: " in learner[0]
    assert re.search(r"system/collect_seconds: \S+ .*system/sps: ", text), text
    assert max(len(line) for line in text.splitlines()) <= 300


def test_the_reward_window_names_the_updates_its_means_span(out_dir):
    execute_exp(get_config("gym/ddppo_cartpole", run_overrides(out_dir, 3)), "train")
    text = (out_dir / "train.log").read_text()
    # Means are differences of cumulative snapshots taken after each update:
    # after update 1 the snapshot itself (1 update), then n snapshots span
    # n - 1 updates. The label said 1, 2, 3.
    assert re.findall(r"window of (\d+) updates", text) == ["1", "1", "2"]


def test_a_long_text_line_continues_within_300_characters_with_its_timestamp():
    from habitat_ver.trainers.training_log import wrapped_lines

    # 30 pairs of 19 characters ("learner/key_10: 1.5"), two spaces apart,
    # within 300 - 24 (the timestamp) = 276: 13 pairs make 13 * 19 + 12 * 2 =
    # 271 characters, a 14th 271 + 2 + 19 = 292 > 276; a continued line starts
    # with two spaces (273), and the last holds the 4 left (2 + 4 * 19 + 3 * 2 = 84).
    values = {f"learner/key_{i}": 1.5 for i in range(10, 40)}
    lines = wrapped_lines(values, ".4g")
    assert [len(line) for line in lines] == [271, 273, 84]
    assert lines[1].startswith("  learner/key_") and not lines[0].startswith(" ")
    joined = "  ".join(line.strip() for line in lines)
    assert joined == "  ".join(f"learner/key_{i}: 1.5" for i in range(10, 40))
    head = "window of 1 updates, 3 episodes: "
    assert wrapped_lines({"reward": 1.0}, ".3f", head) == [head + "reward: 1.000"]
