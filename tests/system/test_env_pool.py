"""The three env pools behind a trainer's ``self.envs`` satisfy its protocol,
and each asynchronous pool the protocol its consumer is typed on."""

import functools

import pytest

from habitat_ver.config.compose import get_config
from habitat_ver.envs.factory import VerVectorEnvFactory
from habitat_ver.system.env_pool import (
    AsyncEnvPool,
    AsyncGroupPool,
    EnvPool,
    SharedBufferPool,
    VectorEnvPool,
)
from habitat_ver.system.grouped_pool import GroupedPool
from habitat_ver.system.lockstep_pool import LockstepPool
from habitat_ver.system.per_env_pool import PerEnvPool

from .test_shared_buffers import CountingEnv


def _check_pool(pool, num_envs):
    assert isinstance(pool, EnvPool)
    assert pool.num_envs == num_envs
    observations = pool.post_step(pool.reset())
    assert len(observations) == num_envs


def test_the_protocol_refuses_what_lacks_a_member():
    class NoClose:
        num_envs = 1

        def reset(self):
            return []

        def post_step(self, observations):
            return observations

    assert not isinstance(NoClose(), EnvPool)
    assert not isinstance(NoClose(), SharedBufferPool)


def test_ver_env_workers_are_a_shared_buffer_pool():
    with PerEnvPool([CountingEnv] * 3, serial=True) as pool:
        _check_pool(pool, 3)
        assert isinstance(pool, SharedBufferPool)
        assert tuple(pool.buffers.rewards.shape[:1]) == (3,)
        # VER's collector steps envs one by one; APPO's groups are not here.
        assert isinstance(pool, AsyncEnvPool)
        assert not isinstance(pool, AsyncGroupPool)


def test_appo_rollout_workers_are_a_shared_buffer_pool():
    makers = [(i, functools.partial(CountingEnv)) for i in range(4)]
    pool = GroupedPool(makers, num_workers=2, num_groups=2, serial=True)
    try:
        _check_pool(pool, 4)
        assert isinstance(pool, SharedBufferPool)
        assert isinstance(pool, AsyncGroupPool)
        assert not isinstance(pool, AsyncEnvPool)
        assert pool.all_groups() == [(0, 0), (0, 1), (1, 0), (1, 1)]
    finally:
        pool.close()


@pytest.mark.multiproc
def test_the_lockstep_vector_env_is_an_env_pool(tmp_path):
    config = get_config(
        "gym/ddppo_cartpole",
        [
            "habitat_baselines.num_environments=2",
            f"habitat_baselines.log_file={tmp_path}/train.log",
        ],
    )
    envs = VerVectorEnvFactory().construct_envs(config)
    try:
        assert isinstance(envs, LockstepPool)
        _check_pool(envs, 2)
        assert isinstance(envs, VectorEnvPool)  # what upstream's lock-step loop calls
        # It shares no rows: trainers that need them build their own pools.
        assert not isinstance(envs, SharedBufferPool)
        assert not isinstance(envs, (AsyncEnvPool, AsyncGroupPool))
    finally:
        envs.close()
