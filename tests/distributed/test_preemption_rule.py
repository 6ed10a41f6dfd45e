"""Preemption rules by name: the registry, and a toy rule added from outside."""

import pytest

from habitat_ver.config.compose import get_config
from habitat_ver.config.validate import ConfigError, validate
from habitat_ver.distributed.preemption import RolloutTracker
from habitat_ver.distributed.preemption_rule import (
    NoPreemption,
    PreemptionSetup,
    build_preemption_rule,
    preemption_rule_names,
    register_preemption_rule,
    unregister_preemption_rule,
)
from habitat_ver.distributed.ver_tracker import VERPreemptionTracker
from habitat_ver.trainers.ddppo import DDPPOTrainer
from habitat_ver.trainers.ver import VERTrainer

from habitat_ver.common.capabilities import CUT_ROLLOUT, VARIABLE_EXPERIENCE
from habitat_ver.trainers.appo import AppoTrainer

from ..trainers.conftest import run_overrides, tensorboard_scalars
from .toy_preemption import HalfRollout

T, N = 16, 2
POLICY = "habitat_baselines.distrib_preemption.policy"


def _setup(store=None, world_size=1):
    return PreemptionSetup(store, 0, world_size, N, T, sync_frac=0.6, short_rollout_fraction=0.25)


@pytest.fixture
def toy_rule():
    register_preemption_rule(
        "half", HalfRollout.from_setup, needs=(CUT_ROLLOUT, VARIABLE_EXPERIENCE)
    )
    yield "half"
    unregister_preemption_rule("half")


def test_built_in_rules_are_registered_for_the_trainers_that_run_them():
    assert preemption_rule_names()[:3] == ("none", "ddppo", "ver")
    assert preemption_rule_names(DDPPOTrainer.PROVIDES) == ("none", "ddppo")
    assert preemption_rule_names(VERTrainer.PROVIDES) == ("none", "ddppo", "ver")
    assert preemption_rule_names(AppoTrainer.PROVIDES) == ("none",)


def test_a_single_rank_gets_no_preemption_from_the_built_in_rules():
    for name in ("none", "ddppo", "ver"):
        rule = build_preemption_rule(name, _setup())
        assert type(rule) is NoPreemption and not rule.cuts_rollouts, name


def test_multi_rank_rules_are_the_trackers():
    import torch.distributed as dist

    store = dist.HashStore()
    assert isinstance(build_preemption_rule("ddppo", _setup(store, 2)), RolloutTracker)
    assert isinstance(build_preemption_rule("ver", _setup(store, 2)), VERPreemptionTracker)


def test_an_unknown_rule_is_refused_listing_the_registered_ones(toy_rule):
    with pytest.raises(KeyError, match=r"no preemption rule 'fastest'.*'none', 'ddppo', 'ver'"):
        build_preemption_rule("fastest", _setup())
    config = get_config("gym/ver_cartpole", [f"{POLICY}=fastest"])
    allowed = r"one of \('auto', 'none', 'ddppo', 'ver', 'half'\)"
    with pytest.raises(ConfigError, match=rf"distrib_preemption.policy='fastest'.*{allowed}"):
        validate(config)


def test_a_name_is_not_silently_taken_over():
    with pytest.raises(ValueError, match="'ddppo' is already registered"):
        register_preemption_rule("ddppo", HalfRollout.from_setup)
    with pytest.raises(ValueError, match="'auto' is reserved"):
        register_preemption_rule("auto", HalfRollout.from_setup)


def test_a_registered_rule_is_validated_refused_elsewhere_and_run_by_the_trainer(
    toy_rule, tmp_path
):
    out_dir = tmp_path / "run"
    config = get_config("gym/ver_cartpole", run_overrides(out_dir, 3) + [f"{POLICY}={toy_rule}"])
    validate(config)  # config validation accepts the new name
    ddppo_config = get_config("gym/ddppo_cartpole", [f"{POLICY}={toy_rule}"])
    refused = r"policy='half' is not allowed for trainer 'ddppo': one of "
    refused += r"\('auto', 'none', 'ddppo'\)"
    with pytest.raises(ConfigError, match=refused):  # registered for ver only
        DDPPOTrainer(ddppo_config)

    trainer = VERTrainer(config)
    trainer.serial_envs = True
    trainer.train()
    rule = trainer._preemption
    assert isinstance(rule, HalfRollout) and rule.setup.envs_per_rank == N
    hooks = ["start_rollout", "end_rollout", "end_update"]
    assert rule.calls == [(hook, u) for u in range(3) for hook in hooks]
    # The first rollout is never cut (nothing to fill from); the next two stop
    # at half and are filled from the previous rollout.
    stats = trainer.rollout_stats
    assert [s["fresh"] + s["stale"] for s in stats] == [T * N] * 3
    assert stats[0]["stale"] == 0
    assert all(T * N // 2 <= s["fresh"] < T * N for s in stats[1:]), stats
    assert tensorboard_scalars(out_dir / "tb")["system/toy_cuts"] == [0.0, 1.0, 2.0]
