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
    assert re.search(r"learner/loss/policy: \S+ .*learner/grad_norm: ", text), text
    assert re.search(r"system/collect_seconds: \S+ .*system/sps: ", text), text


def test_the_reward_window_names_the_updates_its_means_span(out_dir):
    execute_exp(get_config("gym/ddppo_cartpole", run_overrides(out_dir, 3)), "train")
    text = (out_dir / "train.log").read_text()
    # Means are differences of cumulative snapshots taken after each update:
    # after update 1 the snapshot itself (1 update), then n snapshots span
    # n - 1 updates. The label said 1, 2, 3.
    assert re.findall(r"window of (\d+) updates", text) == ["1", "1", "2"]
