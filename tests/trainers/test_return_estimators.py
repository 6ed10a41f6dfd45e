"""A new return estimator is one class plus its registration (issue 28, item 1).

The toy estimator below (undiscounted reward-to-go within the rollout, no
bootstrap) is registered under a name, chosen with
``habitat_baselines.returns.estimator`` and used by the ddppo trainer's update:
the advantages PPO learns on are its returns minus the stored values.
"""

import math

import pytest
import torch

from habitat_ver.config.compose import get_config
from habitat_ver.config.validate import ConfigError, validate
from habitat_ver.trainers.ddppo import DDPPOTrainer
from habitat_ver.trainers.ver import VERTrainer
from habitat_ver.updaters.gae_targets import GAETargets
from habitat_ver.updaters.targets import (
    register_return_estimator,
    unregister_return_estimator,
)
from habitat_ver.common.capabilities import ROLLOUT_STEPS

from ..updaters.toy_estimator import RewardToGo
from .conftest import run_overrides

T = 16  # run_overrides' rollout length


@pytest.fixture
def reward_to_go(monkeypatch):
    # A toy capability only ddppo provides here, so ver must refuse the estimator.
    monkeypatch.setattr(DDPPOTrainer, "PROVIDES", DDPPOTrainer.PROVIDES | {"toy"})
    register_return_estimator("reward_to_go", RewardToGo.from_config, needs=(ROLLOUT_STEPS, "toy"))
    yield "reward_to_go"
    unregister_return_estimator("reward_to_go")


def _expected_returns(rewards, masks):
    """Reward-to-go by hand, env by env (``masks[t + 1]`` False: step t ended
    its episode)."""
    steps, envs = rewards.shape[:2]
    expected = torch.zeros(steps, envs)
    for e in range(envs):
        following = 0.0
        for t in reversed(range(steps)):
            ended = not bool(masks[t + 1, e])
            following = float(rewards[t, e]) + (0.0 if ended else following)
            expected[t, e] = following
    return expected


def test_a_registered_estimator_gives_the_trainers_update_its_advantages(out_dir, reward_to_go):
    config = get_config(
        "gym/ddppo_cartpole",
        run_overrides(out_dir, num_updates=1)
        + [
            f"habitat_baselines.returns.estimator={reward_to_go}",
            "habitat_baselines.rl.ppo.use_normalized_advantage=False",
        ],
    )
    trainer = DDPPOTrainer(config)
    trainer._init_train()
    try:
        assert isinstance(trainer.agent.updater.targets, RewardToGo)
        trainer.collect_rollout()
        rollouts = trainer.agent.rollouts
        buffers = rollouts.buffers
        rewards, values = buffers["rewards"][:T, :, 0].clone(), buffers["value_preds"][:T, :, 0]
        expected = _expected_returns(rewards, buffers["masks"][: T + 1, :, 0])
        expected_advantages = expected - values
        # CartPole pays 1 per step: a return counts the steps left in its
        # episode within this rollout (the last step's is 1).
        assert torch.equal(expected[-1], torch.ones(2))
        seen = []
        generate = rollouts.data_generator

        def recording_generator(advantages, num_mini_batch):
            seen.append(advantages.clone())
            return generate(advantages, num_mini_batch)

        rollouts.data_generator = recording_generator
        trainer._update_agent()  # upstream's: bootstrap value, compute_returns, update
        assert len(seen) == 2  # ppo_epoch = 2, same advantages each epoch
        torch.testing.assert_close(seen[0][:T, :, 0], expected_advantages, rtol=0, atol=1e-6)
        assert torch.isnan(seen[0][T:]).all()  # row T is never learnt on
    finally:
        trainer.envs.close()


def test_auto_is_gae_with_the_configs_keys_for_ddppo(out_dir):
    config = get_config(
        "gym/ddppo_cartpole",
        run_overrides(out_dir, num_updates=1)
        + ["habitat_baselines.rl.ppo.gamma=0.5", "habitat_baselines.rl.ppo.tau=0.25"],
    )
    trainer = DDPPOTrainer(config)
    trainer._init_train()
    try:
        assert trainer.return_estimator() == "gae"
        assert trainer.agent.updater.targets == GAETargets(0.5, 0.25, use_gae=True)
    finally:
        trainer.envs.close()


@pytest.mark.parametrize(
    "trainer, value, allowed",
    [
        ("ddppo", "nstep", "one of ('auto', 'gae') for trainer 'ddppo'"),
        ("ver", "vtrace", "one of ('auto', 'gae') for trainer 'ver'"),
        ("appo", "gae", "one of ('auto', 'vtrace') for trainer 'appo'"),
    ],
)
def test_an_unknown_estimator_is_one_error_naming_the_value_and_the_allowed_ones(
    trainer, value, allowed
):
    config = get_config(f"gym/{trainer}_cartpole", [f"habitat_baselines.returns.estimator={value}"])
    with pytest.raises(ConfigError) as raised:
        validate(config)
    message = str(raised.value)
    assert message == (f"habitat_baselines.returns.estimator={value!r} is not allowed: {allowed}")


def test_a_registered_estimator_is_allowed_for_its_trainers_only(reward_to_go):
    chosen = [f"habitat_baselines.returns.estimator={reward_to_go}"]
    validate(get_config("gym/ddppo_cartpole", chosen))
    allowed = r"'reward_to_go' is not allowed: one of \('auto', 'gae'\) for trainer 'ver'"
    with pytest.raises(ConfigError, match=allowed):
        validate(get_config("gym/ver_cartpole", chosen))


@pytest.mark.parametrize("trainer_cls", [DDPPOTrainer, VERTrainer], ids=["ddppo", "ver"])
def test_upstreams_updater_learns_on_returns_the_estimator_filled(out_dir, trainer_cls):
    # Upstream's PPO has no targets step and reads returns from the storage:
    # our storage gets the run's estimator and fills them in compute_returns.
    name = trainer_cls.TRAINER_KIND
    config = get_config(
        f"gym/{name}_cartpole",
        run_overrides(out_dir, num_updates=1) + ["habitat_baselines.updater_name=PPO"],
    )
    trainer = trainer_cls(config)
    trainer.serial_envs = True  # ver's env workers in this process (ddppo ignores it)
    trainer._init_train()
    try:
        assert type(trainer.agent.updater).__name__ == "PPO"
        assert trainer.agent.rollouts.returns_for_readers == GAETargets.from_config(config)
        losses = trainer.learn(trainer.collect_rollout())
        assert math.isfinite(losses["value_loss"]) and math.isfinite(losses["action_loss"])
    finally:
        trainer.envs.close()
