"""One rank of the 2-rank DD-PPO test (run under torchrun; not collected).

Usage: python -m torch.distributed.run ... ddppo_rank_worker.py OUT_JSON_DIR OVERRIDE...
Trains with our `ddppo` trainer and writes what the test checks to
``<OUT_JSON_DIR>/rank<r>.json``.
"""

import hashlib
import json
import os
import sys

import habitat_ver  # noqa: F401  (sim-free mode before habitat)
from habitat_ver.config.compose import get_config
from habitat_ver.trainers.ddppo import DDPPOTrainer


def _digest(state_dict) -> str:
    h = hashlib.sha256()
    for key in sorted(state_dict):
        h.update(key.encode())
        h.update(state_dict[key].detach().cpu().numpy().tobytes())
    return h.hexdigest()


def main() -> None:
    out_dir, overrides = sys.argv[1], sys.argv[2:]
    trainer = DDPPOTrainer(get_config("gym/ddppo_cartpole", overrides))
    trainer.train()
    rank = int(os.environ["RANK"])
    report = dict(
        rank=rank,
        rollout_lengths=trainer.rollout_lengths,
        num_updates_done=trainer.num_updates_done,
        num_steps_done=float(trainer.num_steps_done),
        params=_digest(trainer._agent.actor_critic.state_dict()),
    )
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main()
