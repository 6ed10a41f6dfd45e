"""Evaluating a folder of checkpoints (``eval_ckpt_path_dir`` names a folder).

Upstream's evaluator takes every file of the folder but ``latest*``, oldest
first, and waits for the next one until it has evaluated
``habitat_baselines.num_checkpoints`` of them.  On our folders it took the
resume state for a checkpoint (``KeyError: 'extra_state'``), waited forever
once a run had written fewer checkpoints than that, and wrote its progress
into ``checkpoint_folder``, which an evaluation does not create.

Here the folder's ``ckpt.<n>.pth`` files are evaluated in the order of ``n``,
each once.  The evaluation ends with the checkpoint its run ended with
(``extra_state.percent_done`` 1, which our trainers save, and no later
checkpoint: a finished run whose budget was raised went on), or after
``num_checkpoints`` of them for checkpoints without it; until then it waits
for the next one, as upstream does beside a run still training.  A corrupt
checkpoint is reported and skipped.  The indices
done are kept in ``.eval-progress.json`` in the folder evaluated, written
atomically, so a preempted evaluation goes on where it stopped; in a folder
it may not write (a shared, read-only run) they are kept in memory, with a
warning.
"""

import json
import os
import time
from typing import Any, Callable, Dict, List, Optional

from habitat import logger

from habitat_ver.common.atomic import write_atomically
from habitat_ver.common.checkpoint import CorruptCheckpointError, checkpoints_in

PROGRESS_NAME = ".eval-progress.json"
POLL_SECONDS = 2.0


class EvalProgress:
    """The checkpoint indices of one folder evaluated so far, and whether the
    last of them ended its run."""

    def __init__(self, folder: str):
        self.path = os.path.join(folder, PROGRESS_NAME)
        self.done: List[int] = []
        self.run_ended = False
        self.unwritable = False
        if os.path.isfile(self.path):
            try:
                with open(self.path) as file:
                    saved = json.load(file)
                self.done, self.run_ended = list(saved["evaluated"]), bool(saved["run_ended"])
            except (OSError, ValueError, KeyError, TypeError) as error:
                logger.warning(
                    f"ignoring the unreadable evaluation progress {self.path} ({error!r}): "
                    "evaluating the folder from its first checkpoint"
                )

    def add(self, index: int, run_ended: bool) -> None:
        self.done.append(index)
        self.run_ended = run_ended
        if self.unwritable:
            return
        text = json.dumps({"evaluated": self.done, "run_ended": run_ended}).encode()
        try:
            write_atomically(self.path, lambda out: out.write(text))
        except OSError as error:  # a read-only folder of someone else's run
            self.unwritable = True
            logger.warning(
                f"cannot keep the evaluation's progress in {self.path} ({error}); "
                "evaluation goes on, but a preempted one will start over"
            )


def _ends_run(
    extra_state: Dict[str, Any], evaluated: int, num_checkpoints: int, later: bool
) -> bool:
    """Whether the checkpoint of ``extra_state`` is its run's last; ``later``:
    the folder holds checkpoints of higher index (the run was resumed with a
    raised budget after this one ended it)."""
    percent_done = extra_state.get("percent_done")
    if percent_done is None:  # older checkpoints: upstream's count
        return 0 < num_checkpoints <= evaluated
    return percent_done >= 1.0 and not later


def _why_wait(any_checkpoint: bool) -> str:
    """What the wait for a folder's next checkpoint assumes, for the log."""
    if any_checkpoint:
        return "its run goes on"
    return (
        "the folder holds no checkpoint yet: a run writing there has not saved one; "
        "stop with Ctrl-C if none is training"
    )


def evaluate_folder(
    folder: str,
    evaluate: Callable[[str, int], Dict[str, Any]],
    num_checkpoints: int,
    poll_seconds: float = POLL_SECONDS,
) -> List[int]:
    """Evaluate the folder's checkpoints in order until the run's last one.

    Args:
        folder: the checkpoint folder.
        evaluate: ``(path, n) -> the checkpoint's extra_state`` (evaluates it).
        num_checkpoints: ``habitat_baselines.num_checkpoints``; ends the
            evaluation of checkpoints that do not say where their run was.
        poll_seconds: how often to look for the next checkpoint.

    Returns:
        The indices evaluated by this call, in order.
    """
    progress = EvalProgress(folder)
    if progress.done:
        logger.info(
            f"checkpoints {progress.done} of {folder} were evaluated already "
            f"(delete {progress.path} to evaluate them again)"
        )
    if progress.run_ended and any(
        n > max(progress.done, default=-1) for n, _ in checkpoints_in(folder)
    ):
        logger.info(
            f"{folder} holds checkpoints after the one its run ended with (the run went "
            "on to a raised budget): evaluating them"
        )
        progress.run_ended = False
    evaluated: List[int] = []
    waiting_for: Optional[int] = None
    while not progress.run_ended:
        found = checkpoints_in(folder)
        todo = [(n, path) for n, path in found if n not in progress.done]
        if not todo:
            next_index = max(progress.done, default=-1) + 1
            if waiting_for != next_index:
                why = _why_wait(bool(found))
                logger.info(f"waiting for {folder}/ckpt.{next_index}.pth ({why})")
                waiting_for = next_index
            time.sleep(poll_seconds)
            continue
        index, path = todo[0]
        try:
            extra_state = evaluate(path, index)
        except CorruptCheckpointError as error:
            # Stopping here stopped every rerun here too: the later ones
            # (the run's last among them) were never evaluated.
            logger.error(f"{error}; skipping it")
            progress.add(index, run_ended=False)
            continue
        evaluated.append(index)
        later = any(n > index for n, _ in checkpoints_in(folder))
        progress.add(index, _ends_run(extra_state, len(progress.done) + 1, num_checkpoints, later))
    return evaluated
