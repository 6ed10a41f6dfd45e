"""A rank whose peer died: one line naming it, not GLOO's traceback.

Where no launcher watches the ranks (SLURM's ``srun`` without
``--kill-on-bad-exit``, ranks started by hand), a killed rank leaves the
others to fail in their next collective with GLOO's ``Connection closed by
peer [address]:port`` deep in a traceback.  :func:`peer_loss_exits` turns that
into one line saying which rank went (the only other one, in a 2-rank run),
at which step this one stopped and where the resume state is, and exit status 1.
"""

import contextlib
import sys
from typing import Callable, Iterator

from habitat_baselines.rl.ddppo.ddp_utils import get_distrib_size

from habitat_ver.common.usage import UPSTREAM_CLI, program_name

# What GLOO's TCP transport says when the other end of a pair went away.
PEER_GONE = ("Connection closed by peer", "Connection reset by peer")
PEER_LOST_EXIT_CODE = 1


def is_peer_loss(error: BaseException) -> bool:
    """Whether ``error`` is GLOO's report of a peer that went away."""
    text = str(error)
    return isinstance(error, RuntimeError) and any(m in text for m in PEER_GONE)


def peer_loss_line(rank: int, world: int, where: str) -> str:
    """The one line: which rank is gone (when it can be told), and this one's state."""
    gone = f"rank {1 - rank}" if world == 2 else f"another of the {world} ranks"
    return (
        f"rank {rank}: {gone} closed its connection (it crashed or was killed: see its "
        f"output); this rank stopped {where}; start the whole job again to resume"
    )


@contextlib.contextmanager
def peer_loss_exits(where: Callable[[], str]) -> Iterator[None]:
    """Under ``habitat_baselines.run``, a lost peer raised in the block, after
    the block's own clean-up ran, ends the process with :func:`peer_loss_line`
    and status 1 (elsewhere the error propagates).

    Args:
        where: this rank's state, e.g. ``at step N (resume state in F)``.
    """
    try:
        yield
    except RuntimeError as error:
        if not is_peer_loss(error) or program_name() != UPSTREAM_CLI:
            raise
        # From the launcher's variables (torchrun's or SLURM's): the process
        # group may be gone by now.
        _, rank, world = get_distrib_size()
        line = peer_loss_line(rank, world, where())
        print(f"{UPSTREAM_CLI}: error: {line}", file=sys.stderr)
        sys.exit(PEER_LOST_EXIT_CODE)
