"""The lock-step pool's step hook: what ``ddppo`` records of each step result."""

import torch

from habitat_ver.system.lockstep_pool import ObservedVectorEnv, StepRecord


def _envs_sending(results):
    """An ObservedVectorEnv whose env ``i`` answers ``results[i]`` (no workers)."""
    envs = ObservedVectorEnv.__new__(ObservedVectorEnv)
    envs._connection_read_fns = [lambda result=result: result for result in results]
    return envs


def test_the_record_sees_each_result_and_gives_every_info_the_step_metrics():
    cut = (None, 1.0, True, {"TimeLimit.truncated": True})
    ended = (None, 0.0, True, {"success": 1.0})
    going = (None, 0.0, False, {})
    envs = _envs_sending([cut, ended, going])
    record = StepRecord()
    with envs.observing_steps(record):
        results = [envs.wait_step_at(i) for i in range(3)]
    assert results == [cut, ended, going]  # the same objects, passed on
    # Env 0's step was a time-limit cut; env 1's ended its episode for real.
    assert record.truncated().tolist() == [True, False, False]
    assert record.truncated().dtype == torch.bool
    # Each info now holds both metrics (0.0 where its env did not report it).
    assert [info["success"] for _, _, _, info in results] == [0.0, 1.0, 0.0]
    assert [info["TimeLimit.truncated"] for _, _, _, info in results] == [True, 0.0, 0.0]


def test_results_outside_the_block_are_not_observed():
    envs = _envs_sending([(None, 0.0, True, {"TimeLimit.truncated": True})])
    record = StepRecord()
    with envs.observing_steps(record):
        pass
    envs.wait_step_at(0)
    assert record.cuts == {}
