"""Ship a trained skill checkpoint with habitat-ver.

    python -m habitat_ver.tools.ship_skill close_cab WORK/ckpt/ckpt.12.pth \
        --result benchmarks/results/hab_skill_learning_close_cab_<time>.json

writes ``habitat_ver/skill_checkpoints/close_cab.pth`` (the policy weights and
the training config, its episodes at the generated data's place; no optimizer
state, no resume state) atomically, and the
skill's record in ``provenance.json`` beside it: the config it was trained
with, the commit and step count it was trained to, the data generator's
version, the file's size and SHA-256, and (with ``--result``) its success on the
val arrangements untrained and trained, read from ``hab_skill_learning.py``'s
result record.
"""

import argparse
import hashlib
import json
import os
import sys
from typing import Any, Dict, List, Optional

from habitat_ver.common.atomic import write_atomically
from habitat_ver.common.checkpoint import (
    config_to_plain,
    load_checkpoint_file,
    save_checkpoint_file,
)
from habitat_ver.config.shipped_skills import PROVENANCE, SHIPPED_DIR, provenance
from habitat_ver.tools.make_hab_dataset import EPISODES_SUBDIR

# What the shipped file keeps of a training checkpoint.
KEPT = ("state_dict", "config")
# Overrides of a run that say where its files went and how long it ran, not
# how it trained: left out of the provenance's recipe.
RUN_KEYS = (
    "checkpoint_folder",
    "tensorboard_dir",
    "log_file",
    "pretrained",
    "pretrained_weights",
    "total_num_steps",
    "num_checkpoints",
    "checkpoint_interval",
    "log_interval",
)


def recipe_overrides(overrides: List[str]) -> List[str]:
    """The overrides of a training command that change what it trains."""
    return [o for o in overrides if o.split("=", 1)[0].rsplit(".", 1)[-1] not in RUN_KEYS]


def success_of(metrics: Dict[str, float]) -> Optional[float]:
    """The skill's success rate among evaluation averages (the one metric
    named ``*_success``), or None."""
    found = [v for k, v in metrics.items() if k.endswith("_success") and "." not in k]
    return found[0] if len(found) == 1 else None


def record(skill: str, source: str, shipped: str, result: Optional[Dict[str, Any]]) -> Dict:
    checkpoint = load_checkpoint_file(source)
    config = checkpoint["config"]
    extra = checkpoint.get("extra_state") or {}
    with open(shipped, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    entry: Dict[str, Any] = {
        "file": os.path.basename(shipped),
        "bytes": os.path.getsize(shipped),
        "sha256": digest,
        "task": str(config.habitat.task.type),
        "obs_keys": [str(k) for k in config.habitat.gym.obs_keys],
        "hidden_size": int(config.habitat_baselines.rl.ppo.hidden_size),
        "steps": extra.get("step"),
        "data": EPISODES_SUBDIR,
    }
    if result is not None:
        entry.update(
            config=result["config"],
            # The code the weights were trained with (not a later evaluation's).
            commit=result["train"].get("commit"),
            date=result["date"],
            # Evaluated, where recorded (the split may hold fewer than asked).
            val_episodes=result["trained"].get("episodes") or result["episodes"],
            # How many times each was evaluated (action samples differ).
            val_evals_per_episode=result["trained"].get("evals_per_episode", 1),
            val_success_untrained=success_of(result["untrained"]["metrics"]),
            val_success_trained=success_of(result["trained"]["metrics"]),
            wall_s=result["train"].get("wall_s"),
            overrides=recipe_overrides(result.get("overrides", [])),
        )
        first_stage = result.get("init_from")
        if first_stage:
            # A run started from another run's weights (hab_skill_learning.py
            # --init-from): its steps and those of the run it started from.
            # Its steps count every stage behind the weights it started from.
            before = first_stage.get("steps_in_all", first_stage["step"])
            entry["started_from"] = {"config": first_stage["config"], "steps": before}
            entry["steps_in_all"] = (entry["steps"] or 0) + (before or 0)
    return entry


def at_generated_data(config: Dict[str, Any]) -> None:
    """Point a plain config's episode file at the generated data's folder
    (``hab_data=generated``: ``data/datasets/hab_ver/v1``), in place.

    A run trained on episodes elsewhere (``hab_data.episodes=/some/folder``)
    stores that folder in its config, and an evaluation that takes the
    checkpoint's config (habitat-baselines' ``eval.use_ckpt_config``) would
    read episodes there, on a machine that has no such folder.  The
    provenance's overrides still say where the run's episodes were.
    """
    dataset = config["habitat"]["dataset"]
    name = os.path.basename(dataset["data_path"])
    dataset["data_path"] = os.path.join("data", EPISODES_SUBDIR, "{split}", name)


def ship(skill: str, source: str, result_path: Optional[str]) -> Dict[str, Any]:
    """Write the slim checkpoint of ``skill`` and its provenance record."""
    checkpoint = load_checkpoint_file(source)
    missing = [k for k in KEPT if k not in checkpoint]
    if missing:
        raise ValueError(f"{source} holds no {missing}: not a policy checkpoint")
    # Stored as plain data, as the trainers store it (load_checkpoint_file
    # hands back a read-only DictConfig).
    config = config_to_plain(checkpoint["config"])
    at_generated_data(config)
    slim = {"state_dict": checkpoint["state_dict"], "config": config}
    slim["extra_state"] = {"step": (checkpoint.get("extra_state") or {}).get("step")}
    shipped = os.path.join(SHIPPED_DIR, f"{skill}.pth")
    save_checkpoint_file(slim, shipped)
    result = None
    if result_path is not None:
        with open(result_path) as f:
            result = json.load(f)
    records = provenance()
    records[skill] = record(skill, source, shipped, result)
    text = (json.dumps(records, indent=2, sort_keys=True) + "\n").encode()
    write_atomically(os.path.join(SHIPPED_DIR, PROVENANCE), lambda f: f.write(text))
    return records[skill]


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("skill", help="the hab_skill_checkpoints key, e.g. pick or close_cab")
    parser.add_argument("checkpoint", help="a training checkpoint (ckpt.<n>.pth)")
    parser.add_argument("--result", help="hab_skill_learning.py's result record of the run")
    args = parser.parse_args(argv)
    if not os.path.isfile(args.checkpoint):
        parser.error(f"checkpoint {args.checkpoint!r} is not a file")
    entry = ship(args.skill, args.checkpoint, args.result)
    print(f"shipped {args.skill}: {entry['file']} ({entry['bytes']} bytes, {entry['steps']} steps)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
