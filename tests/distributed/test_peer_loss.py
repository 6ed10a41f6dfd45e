"""A rank whose peer died ends in one line naming it (habitat_ver.distributed.peer_loss)."""

import pytest

from habitat_ver.distributed import peer_loss

GLOO = (
    "[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:561] Connection "
    "closed by peer [127.0.0.1]:51949. This is typically caused by a remote worker crashing."
)


def _lose_peer():
    with peer_loss.peer_loss_exits(lambda: "at step 96 (resume state in ckpt)"):
        raise RuntimeError(GLOO)


@pytest.mark.parametrize(
    "rank, world, gone",
    [("0", "2", "rank 1"), ("1", "2", "rank 0"), ("2", "4", "another of the 4 ranks")],
)
def test_the_run_command_ends_in_one_line_naming_the_rank_gone(
    rank, world, gone, monkeypatch, capsys
):
    monkeypatch.setattr(peer_loss, "program_name", lambda: "habitat_baselines.run")
    monkeypatch.setenv("SLURM_JOBID", "7")
    monkeypatch.setenv("SLURM_PROCID", rank)
    monkeypatch.setenv("SLURM_LOCALID", rank)
    monkeypatch.setenv("SLURM_NTASKS", world)
    with pytest.raises(SystemExit) as ended:
        _lose_peer()
    assert ended.value.code == 1
    assert capsys.readouterr().err == (
        f"habitat_baselines.run: error: rank {rank}: {gone} closed its connection (it "
        "crashed or was killed: see its output); this rank stopped at step 96 (resume "
        "state in ckpt); start the whole job again to resume\n"
    )


def test_elsewhere_and_for_other_errors_the_error_propagates(monkeypatch):
    monkeypatch.setattr(peer_loss, "program_name", lambda: "python")
    with pytest.raises(RuntimeError, match="Connection closed by peer"):
        _lose_peer()
    monkeypatch.setattr(peer_loss, "program_name", lambda: "habitat_baselines.run")
    with pytest.raises(RuntimeError, match="CUDA out of memory"):
        with peer_loss.peer_loss_exits(lambda: ""):
            raise RuntimeError("CUDA out of memory")
    assert peer_loss.is_peer_loss(RuntimeError("... Connection reset by peer ..."))
    assert not peer_loss.is_peer_loss(OSError("Connection closed by peer"))
