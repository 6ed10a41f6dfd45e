"""Known third-party noise off a run's console: what is dropped, what passes,
and that a progress bar never shares a line with anything else."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from habitat_ver.common import filtered_console, noise_filter
from habitat_ver.common.noise_filter import SYNC, LineFilter, classify

# Lines copied from a `rearrange/ver_pick hab_data=generated` run and from
# make_hab_dataset (habitat-sim 0.3.3, gym 0.23, habitat-lab 0.3.3).
MESH_ERROR = (
    "[11:54:39:043051]:[Error]:[Metadata] ObjectAttributesManager.cpp(259)::"
    "preRegisterObjectFinalize : Render asset template handle : `data/replica_cad/configs/"
    "objects/../../objects/frl_apartment_basket.glb` specified in object template with "
    "handle : `data/replica_cad/configs/objects/frl_apartment_basket.object_config.json` "
    "does not correspond to any existing file or primitive render asset, so registration "
    "is aborted."
)
NOISE_LINES = {
    "habitat-sim: object config without its mesh": MESH_ERROR,
    "habitat-sim: no semantic annotations": (
        "[11:54:39:203324]:[Warning]:[Sim] Simulator.cpp(595)::instanceStageForSceneAttributes"
        " : The active scene does not contain semantic annotations : activeSemanticSceneID_ = 0"
    ),
    "Magnum: duplicate static plugin": (
        "PluginManager::Manager: duplicate static plugin StbImageImporter, ignoring"
    ),
    "gym 0.23: deprecation banner": (
        "Please upgrade to Gymnasium, the maintained drop-in replacement of Gym, or contact "
        "the authors of your software and request that they upgrade."
    ),
    "gym: Box bound precision lowered": (
        "/work/main/.venv/lib/python3.11/site-packages/gym/spaces/box.py:84: UserWarning: "
        "\x1b[33mWARN: Box bound precision lowered by casting to float32\x1b[0m"
    ),
    "habitat-lab: Initializing dataset/sim/task": (
        "2026-11-27 11:54:38,500 initializing sim HabVerRearrangeSim-v0"
    ),
}
# What must pass: other habitat-sim errors, our lines, tracebacks, upstream's.
KEPT = [
    "[11:39:40:959275]:[Error]:[Metadata] SceneDatasetAttributesManager.cpp(305)::validateMap"
    " : something that matters",
    "2026-11-27 11:54:53,633 Number of params to train: 8963861",
    "2026-11-27 11:54:25,697 habitat_ver: 16 environments on 1 scene(s)",
    "Traceback (most recent call last):",
    "PluginManager::Manager: cannot load plugin GltfImporter",
    "2026-11-27 11:54:38,500 Initializing dataset RearrangeDataset-v0 failed: no file",
]
REPO = Path(__file__).resolve().parents[2]
# The one line that stands for habitat-sim's missing-mesh errors.
(SUMMARY,) = [noise.summary for noise in noise_filter.NOISE if noise.summary]


@pytest.mark.parametrize("name", sorted(NOISE_LINES))
def test_each_kind_of_noise_is_recognised(name):
    noise = classify(NOISE_LINES[name])
    assert noise is not None and noise.name == name


@pytest.mark.parametrize("line", KEPT)
def test_other_lines_are_not_noise(line):
    assert classify(line) is None


def test_noise_is_dropped_and_the_mesh_errors_summarised_once():
    # Two envs' worth of start-up, cut into chunks at arbitrary bytes, as a
    # pipe delivers it.
    lines = []
    for _env in range(2):
        lines += [NOISE_LINES["Magnum: duplicate static plugin"]] * 6
        lines += [MESH_ERROR] * 23
        lines += [NOISE_LINES["habitat-lab: Initializing dataset/sim/task"], KEPT[1]]
    data = ("\n".join(lines) + "\n").encode()
    state = LineFilter()
    out = b"".join(state.feed(data[i : i + 97]) for i in range(0, len(data), 97))
    out += state.flush()
    shown = out.decode().splitlines()
    # 62 lines in, 3 out: the summary (once) and the two kept lines.
    assert len(lines) == 62 and state.dropped == 60
    assert shown == [SUMMARY, KEPT[1], KEPT[1]]
    assert shown[0].startswith("habitat_ver: hiding habitat-sim's '... registration is aborted'")
    assert "HABITAT_VER_SHOW_NOISE=1 shows them" in shown[0]


BAR = b"\r 10%|#         | 77/768 [00:05<00:45, 15.2step/s]"


def test_a_line_written_while_the_bar_is_drawn_starts_a_line_of_its_own():
    state = LineFilter()
    out = state.feed(BAR)
    assert out == BAR  # a bar's redraw is shown at once, without a newline
    out += state.feed(b"2026-11-27 09:31:07,495 habitat_ver: a worker's line\n")
    out += state.feed(BAR + b"\n")  # the bar again, then tqdm's close
    on_screen = [part.rsplit(b"\r", 1)[-1] for part in out.split(b"\n")]
    # The line was glued to the bar: "...15.2step/s]2026-11-27 09:31:07,495 ...".
    assert on_screen == [
        BAR[1:],
        b"2026-11-27 09:31:07,495 habitat_ver: a worker's line",
        BAR[1:],
        b"",
    ]


def test_a_bar_cleared_by_tqdm_write_adds_no_blank_line():
    state = LineFilter()
    cleared = b"\r" + b" " * 60 + b"\r"  # tqdm.write blanks the bar first
    out = state.feed(BAR) + state.feed(cleared) + state.feed(b"update: 1\n") + state.feed(BAR)
    assert out.count(b"\n") == 1
    assert out.split(b"\n")[0].rsplit(b"\r", 1)[-1] == b"update: 1"


def test_an_unfinished_line_is_kept_until_it_ends_or_the_pipe_idles():
    state = LineFilter()
    assert state.feed(b"PluginManager::Manager: duplicate ") == b""
    assert state.feed(b"static plugin AnyImageImporter, ignoring\nprompt> ") == b""
    assert state.flush() == b"prompt> "
    # A sync line after an unfinished line: counted, the line kept open.
    assert state.feed(b"half" + SYNC + b"\n") == b"half"
    assert state.syncs == 1


@pytest.mark.parametrize(
    "argv, module, filtered",
    [
        (["python", "-m", "habitat_baselines.run", "--config-name=x"], "habitat_baselines.run", 1),
        (["python", "-u", "-m", "habitat_ver.run"], "habitat_ver.run", 1),
        (["python", "-X", "importtime", "-mhabitat_ver.tools.make_hab_dataset"], None, 1),
        (["/venv/bin/python", "/venv/bin/habitat-ver-run", "--help"], "habitat-ver-run", 1),
        (["python", "-m", "pytest", "-x"], "pytest", 0),
        (["python", "-c", "from multiprocessing.forkserver import main"], None, 0),
        (["python", "script.py"], "script.py", 0),
    ],
)
def test_which_command_lines_are_filtered(monkeypatch, argv, module, filtered):
    monkeypatch.setattr(sys, "orig_argv", argv, raising=False)
    found = filtered_console.command_module()
    if module is not None:
        assert found == module
    assert filtered_console.is_filtered_command(found) == bool(filtered)


# A process that installs the filter, then writes as a run does: Python and
# C-level writes, and a child process's, noise and lines that matter.
CHILD = textwrap.dedent(
    """
    import importlib.util, os, subprocess, sys, types
    # The two modules alone: habitat_ver's __init__ would import habitat-lab.
    for package in ("habitat_ver", "habitat_ver.common"):
        sys.modules[package] = types.ModuleType(package)
    for name in ("noise_filter", "filtered_console"):
        path = os.path.join(sys.argv[1], "habitat_ver", "common", name + ".py")
        spec = importlib.util.spec_from_file_location("habitat_ver.common." + name, path)
        module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    assert module.install()
    print(os.environ["MAGNUM_LOG"], flush=True)
    print("Gym has been unmaintained since 2022 and does not support NumPy 2.0", file=sys.stderr)
    os.write(2, b"PluginManager::Manager: duplicate static plugin GltfImporter, ignoring\\n")
    os.write(2, sys.argv[2].encode() + b"\\n")
    subprocess.run([sys.executable, "-c", "import os; os.write(2, b'from a worker\\\\n')"])
    print("last words", file=sys.stderr, flush=True)
    if sys.argv[3] == "crash":
        os._exit(3)  # no atexit: the filter still prints what was written
    """
)


@pytest.mark.parametrize("ending", ["exit", "crash"])
def test_a_filtered_process_and_its_children_keep_only_what_matters(tmp_path, ending):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    with open(tmp_path / "stderr.txt", "wb") as stderr:
        done = subprocess.run(
            [sys.executable, str(script), str(REPO), MESH_ERROR, ending],
            stdout=subprocess.PIPE,
            stderr=stderr,
            env={"PATH": "/usr/bin:/bin"},
            timeout=60,
        )
    assert done.returncode == (3 if ending == "crash" else 0)
    assert done.stdout == b"quiet\n"  # MAGNUM_LOG for the GL context report
    expected = [SUMMARY, "from a worker", "last words"]
    if ending == "exit":
        # Read the moment the process is gone: it waited for the filter.
        assert (tmp_path / "stderr.txt").read_text().splitlines() == expected
    else:
        # A crash does not wait; the filter prints the rest once it has read it.
        lines = []
        for _ in range(100):
            lines = (tmp_path / "stderr.txt").read_text().splitlines()
            if lines == expected:
                break
            subprocess.run(["sleep", "0.1"])
        assert lines == expected


def test_show_noise_turns_it_off(monkeypatch):
    monkeypatch.setenv(noise_filter.SHOW_ENV_VAR, "1")
    assert filtered_console.install() is False


# Excerpts of a 16-env start-up through a pipe (HABITAT_VER_SHOW_NOISE=1 | cat):
# Corrade writes a habitat-sim line in pieces, and other workers' lines land
# between them.
GARBLED = (
    "[12:31:22:377485]:[Error]:[Metadata] ObjectAttributesManager.cpp(259)::"
    "preRegisterObjectFinalize : 2026-11-27 12:31:22,396 habitat_ver: worker 3 is up\n"
    "Render asset template handle : `data/replica_cad/configs/objects/../../objects/"
    "frl_apartment_clock.glb` specified in object template with handle : `data/replica_cad/"
    "configs/objects/frl_apartment_clock.object_config.json` does not correspond to any "
    "existing file or primitive render asset, so registration is aborted.\n"
    "PluginManager::Manager: duplicate static plugin2026-11-27 12:31:24,351 initializing sim "
    "HabVerRearrangeSim-v0\n"
    " StbImageImporter, ignoring\n"
    "[12:24:25:968860]:[Warning]:[Sim] Simulator.cpp(595)::instanceStageForSceneAttributes : "
    "PluginManager::Manager: duplicate static plugin StbImageImporter, ignoring\n"
    "The active scene does not contain semantic annotations : activeSemanticSceneID_ = 0\n"
    "Render asset template handle : `data/replica_cad/configs/objects/../../objects/"
    "frl_apartment_rug_02.glb` specified in object template with handle : `Traceback (most "
    "recent call last):\n"
    "data/replica_cad/configs/objects/frl_apartment_rug_02.object_config.json` does not "
    "correspond to any existing file or primitive render asset, so registration is aborted.\n"
).encode()


def test_pieces_of_noise_are_cut_out_of_lines_they_were_written_into():
    state = LineFilter()
    shown = (state.feed(GARBLED) + state.flush()).decode().splitlines()
    assert shown == [
        "2026-11-27 12:31:22,396 habitat_ver: worker 3 is up",
        SUMMARY,
        "Traceback (most recent call last):",
    ]
