"""Start-up of a run's env workers: N envs against one, on the real simulator (not a test).

Builds ``ver``'s env workers
(:class:`~habitat_ver.system.per_env_pool.PerEnvPool`, one process per env,
all built at once) for a config at each ``--envs`` count, and reports the
seconds until every env has reported its spaces and until every env has been
reset, and the ratio of each count's start-up to one env's.  Rounds alternate
the counts, so that load on the machine hits them alike.

    .venv/bin/python benchmarks/env_startup.py --config-name pointnav/ver_simple_room \\
        --envs 1 8 --rounds 2
"""

import argparse
import json
import os
import statistics
import time
from typing import Dict, List

import habitat_ver  # noqa: F401  (sim-free mode before habitat imports)
from habitat_ver.config.compose import get_config
from habitat_ver.envs.factory import env_builders
from habitat_ver.system.per_env_pool import PerEnvPool

OUR_FACTORY = "habitat_ver.envs.factory.VerVectorEnvFactory"


def start_up(config_name: str, num_envs: int) -> Dict[str, float]:
    """Seconds to build ``num_envs`` env workers, and to the end of their reset."""
    config = get_config(
        config_name,
        [
            f"habitat_baselines.num_environments={num_envs}",
            f"habitat_baselines.vector_env_factory._target_={OUR_FACTORY}",
        ],
    )
    start = time.monotonic()
    pool = PerEnvPool([make for _, make in env_builders(config)])
    try:
        built = time.monotonic() - start
        pool.reset()
        return {"built_s": built, "reset_s": time.monotonic() - start}
    finally:
        pool.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config-name", default="pointnav/ver_simple_room")
    parser.add_argument("--envs", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    runs: Dict[int, List[Dict[str, float]]] = {n: [] for n in args.envs}
    load_before = os.getloadavg()
    for _ in range(args.rounds):
        for n in args.envs:
            runs[n].append(start_up(args.config_name, n))
            print(f"{n} envs: {runs[n][-1]}", flush=True)
    median = {n: statistics.median(r["reset_s"] for r in runs[n]) for n in args.envs}
    one = median.get(1)
    report = {
        "config": args.config_name,
        "cpus": os.cpu_count(),
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "runs": runs,
        "median_reset_s": median,
        "ratio_to_one_env": {n: median[n] / one for n in args.envs} if one else None,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
