"""One rank of the 2-rank tests (run under torchrun; not collected).

Usage: python -m torch.distributed.run ... ddppo_rank_worker.py OUT_JSON_DIR CONFIG OVERRIDE...
Trains with the config's trainer and writes what the tests check to
``<OUT_JSON_DIR>/rank<r>.json``.
"""

import hashlib
import json
import os
import sys

import habitat_ver  # noqa: F401  (sim-free mode before habitat)
from habitat_ver.config.compose import get_config
from habitat_ver.run import get_trainer_class


def _digest(state_dict) -> str:
    h = hashlib.sha256()
    for key in sorted(state_dict):
        h.update(key.encode())
        h.update(state_dict[key].detach().cpu().numpy().tobytes())
    return h.hexdigest()


def main() -> None:
    out_dir, config_name, overrides = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(os.path.join(out_dir, f"rank{os.environ['RANK']}.pid"), "w") as f:
        f.write(str(os.getpid()))  # for tests that signal one rank
    config = get_config(config_name, overrides)
    trainer = get_trainer_class(config.habitat_baselines.trainer_name)(config)
    trainer.train()
    rank = int(os.environ["RANK"])
    report = dict(
        rank=rank,
        rollout_lengths=trainer.rollout_lengths,
        num_updates_done=trainer.num_updates_done,
        num_steps_done=float(trainer.num_steps_done),
        params=_digest(trainer.agent.actor_critic.state_dict()),
        rollout_stats=getattr(trainer, "rollout_stats", None),
    )
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main()
