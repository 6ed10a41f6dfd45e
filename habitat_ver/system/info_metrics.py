"""One step's info metrics, the same set for every env of a lock-step batch.

Upstream's ``PPOTrainer._collect_environment_result`` (our ``ddppo`` steps
through it) stacks each scalar info metric over the envs that report it and
adds the stack to the per-env episode statistics.  A metric that only some
envs report on a step gives a stack shorter than the batch: gym's
``TimeLimit.truncated``, present only on the step the time limit cuts, raised
``RuntimeError: The size of tensor a (8) must match the size of tensor b (2)``
once two of eight CartPole envs reached the limit together, and with one env
it broadcast silently, crediting that env's value to every env whose episode
ended.  ``ver`` and ``appo`` read each env's own metrics
(:func:`habitat_ver.system.shared_buffers.record_episode_stats`), where an
absent metric adds nothing to the ended episode's sum; 0.0 does the same here.
"""

from typing import Any, Dict, List, Set

from habitat_baselines.utils.info_dict import extract_scalars_from_info


class StepMetrics:
    """The infos of one lock-step batch, added as each env's result arrives.

    After each :meth:`add`, every info added so far holds (in place) every
    scalar metric any of them has, as 0.0 where its env did not report it,
    under the name upstream's extraction gives it (nested keys joined with
    ``.``), so that every metric stacks to one value per env.  Each info is
    read once; older ones are touched only when a new metric appears.
    """

    def __init__(self) -> None:
        self._infos: List[Dict[str, Any]] = []
        self._found: List[Set[str]] = []
        self._names: Set[str] = set()

    def add(self, info: Dict[str, Any]) -> None:
        found = set(extract_scalars_from_info(info))
        new = found - self._names
        for other, other_found in zip(self._infos, self._found):
            for name in new - other_found:
                other[name] = 0.0
            other_found |= new
        self._names |= new
        for name in self._names - found:
            info[name] = 0.0
        self._infos.append(info)
        self._found.append(found | self._names)
