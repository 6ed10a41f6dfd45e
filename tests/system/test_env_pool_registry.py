"""Env pools by name: the registry, its protocol check, and a toy pool added
from outside that a trainer steps through it."""

import typing

import pytest

from habitat_ver.config.compose import get_config
from habitat_ver.envs.pools import pool_setup
from habitat_ver.system.env_pool import (
    LOCKSTEP,
    AsyncEnvPool,
    AsyncGroupPool,
    EnvPool,
    SharedBufferPool,
    VectorEnvPool,
    env_pool_kind,
    env_pool_names,
    register_env_pool,
    unregister_env_pool,
)
from habitat_ver.trainers.appo import AppoTrainer
from habitat_ver.trainers.ddppo import DDPPOTrainer
from habitat_ver.trainers.ver import VERTrainer

from ..trainers.conftest import run_overrides
from .toy_pool import ToyPool, toy_pool

T, N = 16, 2


@pytest.fixture
def toy_kind():
    register_env_pool("toy", AsyncEnvPool, toy_pool)
    yield "toy"
    unregister_env_pool("toy")


def _serial_setup():
    """Four CartPole envs of the appo config (its layout: 2 workers x 2 groups)."""
    config = get_config("gym/appo_cartpole", ["habitat_baselines.num_environments=4"])
    return pool_setup(config, serial=True)


def test_the_built_in_kinds_and_the_trainers_that_name_them():
    assert env_pool_names()[:3] == (LOCKSTEP, "per_env", "grouped")
    assert env_pool_kind(LOCKSTEP, EnvPool) == env_pool_kind(LOCKSTEP, VectorEnvPool)
    assert env_pool_kind(LOCKSTEP, EnvPool).build is None  # upstream's set-up builds it
    for trainer, provides in (
        (DDPPOTrainer, VectorEnvPool),
        (VERTrainer, AsyncEnvPool),
        (AppoTrainer, AsyncGroupPool),
    ):
        assert env_pool_kind(trainer.ENV_POOL, trainer.ENV_POOL_NEEDS).provides is provides


def test_every_registered_builder_returns_the_protocol_of_its_kind(toy_kind):
    # mypy checks each builder's pool against its return type; the registry
    # entry must say the same protocol, and the built pool satisfies it.
    setup = _serial_setup()
    built = []
    for name in env_pool_names():
        kind = env_pool_kind(name, EnvPool)
        if kind.build is None:
            continue
        assert typing.get_type_hints(kind.build)["return"] is kind.provides, name
        pool = kind.build(setup)
        try:
            assert isinstance(pool, kind.provides), name
            assert isinstance(pool, SharedBufferPool), name  # trainers adopt its spaces
            assert pool.num_envs == 4
            assert len(pool.post_step(pool.reset())) == 4
        finally:
            pool.close()
        built.append(name)
    assert {"per_env", "grouped", "toy"} <= set(built)  # and any kind registered later


def test_a_kind_without_the_protocol_a_trainer_needs_is_refused(toy_kind):
    refused = (
        r"env pool 'lockstep' provides VectorEnvPool, and AsyncEnvPool is needed; "
        r"kinds providing it: \('per_env', 'toy'\)"
    )
    with pytest.raises(TypeError, match=refused):
        env_pool_kind(LOCKSTEP, AsyncEnvPool)
    with pytest.raises(TypeError, match=r"'toy' provides AsyncEnvPool, and AsyncGroupPool"):
        env_pool_kind("toy", AsyncGroupPool)
    with pytest.raises(KeyError, match=r"no env pool 'nope': registered are \('lockstep', "):
        env_pool_kind("nope", EnvPool)


def test_a_name_is_not_silently_taken_over():
    with pytest.raises(ValueError, match="env pool 'per_env' is already registered"):
        register_env_pool("per_env", AsyncEnvPool, toy_pool)
    with pytest.raises(ValueError, match="'auto' is reserved"):
        register_env_pool("auto", AsyncEnvPool, toy_pool)


class ToyVERTrainer(VERTrainer):
    """``ver`` stepping the toy pool: one class attribute."""

    ENV_POOL = "toy"


def test_a_registered_toy_pool_is_stepped_by_the_ver_trainer(toy_kind, tmp_path):
    config = get_config("gym/ver_cartpole", run_overrides(tmp_path / "run", 2, N))
    trainer = ToyVERTrainer(config)
    trainer.train()
    pool = trainer.envs
    assert isinstance(pool, ToyPool) and pool.closed
    assert trainer.num_updates_done == 2
    # The pool was built from this rank's envs: CartPole, global indices 0..N-1.
    assert [index for index, _ in pool.setup.makers] == list(range(N))
    assert pool.setup.describe(1).startswith("global index 1, ")
    assert not pool.setup.serial
    # Each rollout holds T*N steps, all of them stepped by the toy pool; the
    # actions computed last are still in flight (stepped, not yet collected).
    stats = trainer.rollout_stats
    assert [s["fresh"] + s["stale"] for s in stats] == [T * N] * 2
    assert [s["stale"] for s in stats] == [0, 0]
    assert 2 * T * N <= pool.steps <= 2 * T * N + N
    assert sum(sum(steps) for steps in trainer.env_steps_per_rollout) == 2 * T * N
