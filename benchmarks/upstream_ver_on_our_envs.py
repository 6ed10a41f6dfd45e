"""Run habitat-baselines' own ``ver`` on the envs our trainers step (benchmark only).

Upstream VER's env workers (``habitat_baselines.rl.ver.environment_worker``)
build their env with ``habitat.gym.make_gym_from_config`` and never call a
vector-env factory, so our :func:`habitat_ver.envs.builder.build_env` (the
scenario mix and the straggler wrapper) was skipped: every upstream ``ver``
env ran the config's one gym id with no waits.  On the wait-bound workload it
then reported 515 steps/s against a limit of 424 (with waits 20x longer, still
440 steps/s).

This launcher makes those workers build env ``i`` exactly as ours do.  Upstream
gives worker ``i`` the config with ``habitat.seed = seed + i``; the base seed
travels in an environment variable.  The workers start from a forkserver, so
the patch is applied there: the forkserver preloads this module after
:mod:`habitat_ver`.  Use it in place of ``python -m habitat_ver.run``:

    .venv/bin/python benchmarks/upstream_ver_on_our_envs.py \\
        --config-name=doom/ddppo_wait_bound habitat_baselines.trainer_name=upstream_ver

A benchmark shim for measuring the peer, never imported by the package.
"""

import argparse
import multiprocessing
import os
import sys
from pathlib import Path
from typing import Any, Tuple

BASE_SEED = "HABITAT_VER_BENCH_BASE_SEED"
# The forkserver imports these, in order, before it forks a worker.
PRELOAD = ["habitat_ver", Path(__file__).stem]


def build_our_env(config: Any, dataset: Any = None) -> Any:
    """``make_gym_from_config`` as upstream VER's workers call it, building
    env ``habitat.seed - base seed`` with our builder."""
    from habitat_ver.envs.builder import build_env
    from habitat_ver.system.process_names import ENV_WORKER, name_this_thread

    if dataset is not None:
        raise ValueError("upstream VER passed a dataset; our builder loads its own")
    index = int(config.habitat.seed) - int(os.environ[BASE_SEED])
    # Named as our env workers are, so benchmarks/process_cpu.py tells them
    # from upstream's inference workers.
    name_this_thread(f"{ENV_WORKER}-{index}")
    return build_env(config, index)


def patch_upstream_workers() -> None:
    """Point upstream VER's env workers at :func:`build_our_env`."""
    from habitat_baselines.rl.ver import environment_worker

    environment_worker.make_gym_from_config = build_our_env


def _parse(argv: list) -> Tuple[str, list]:
    """``(config name, Hydra overrides)`` of ``habitat_ver.run``'s command line."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config-name", required=True, help="a ddppo-family config")
    args, rest = parser.parse_known_args(argv)
    return args.config_name, [a for a in rest if not a.startswith("-")]


def _base_seed(name: str, overrides: list) -> int:
    """The run's ``habitat.seed``, composed as ``habitat_ver.run`` will."""
    from habitat_ver.config.compose import get_config

    return int(get_config(name, overrides).habitat.seed)


def main() -> None:
    name, overrides = _parse(sys.argv[1:])
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # for the forkserver
    import habitat_ver  # noqa: F401  (sim-free mode; sets its own preload first)
    from habitat_ver import run

    os.environ[BASE_SEED] = str(_base_seed(name, overrides))
    multiprocessing.get_context("forkserver").set_forkserver_preload(PRELOAD)
    patch_upstream_workers()  # this process too (nothing else builds envs there)
    run.main()


if __name__ == "__main__":
    main()
elif os.environ.get(BASE_SEED) is not None:
    patch_upstream_workers()  # imported by the forkserver
