"""StepMetrics: one value per env for every metric of a lock-step batch, as
upstream's extraction then stacks them."""

from habitat_baselines.utils.info_dict import extract_scalars_from_infos

from habitat_ver.system.info_metrics import StepMetrics


def _added(infos):
    metrics = StepMetrics()
    for info in infos:
        metrics.add(info)
    return extract_scalars_from_infos(infos)


def test_a_metric_of_some_envs_gets_zero_on_the_others():
    infos = [{"TimeLimit.truncated": True}, {}, {"TimeLimit.truncated": True}, {}]
    # Upstream alone: two values for four envs.
    assert extract_scalars_from_infos([dict(i) for i in infos]) == {
        "TimeLimit.truncated": [1.0, 1.0]
    }
    assert _added(infos) == {"TimeLimit.truncated": [1.0, 0.0, 1.0, 0.0]}


def test_a_metric_first_seen_on_the_last_env_reaches_the_earlier_ones():
    infos = [{"spl": 0.5}, {"spl": 0.25}, {"spl": 1.0, "success": 1.0}]
    assert _added(infos) == {"spl": [0.5, 0.25, 1.0], "success": [0.0, 0.0, 1.0]}


def test_nested_and_non_scalar_metrics_keep_upstream_names():
    # "a.c" is a string in env 1 (not a scalar, so absent there) and 3 in env 2.
    infos = [{}, {"a": {"b": 2.0, "c": "text"}}, {"a": {"c": 3}}]
    assert _added(infos) == {"a.b": [0.0, 2.0, 0.0], "a.c": [0.0, 0.0, 3.0]}


def test_envs_that_agree_are_left_as_they_are():
    infos = [{"spl": 0.5, "a": {"b": 1.0}}, {"spl": 0.0, "a": {"b": 2.0}}]
    before = [dict(i) for i in infos]
    assert _added(infos) == {"spl": [0.5, 0.0], "a.b": [1.0, 2.0]}
    assert infos == before
