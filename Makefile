# habitat-ver: every set-up step lives here, so a fresh machine needs only
#   make demo   (train VER on the embedded default environment)
#   make test   (the whole test suite, slow learning checks included, on
#                Python 3.11; then the fast suite on Python 3.9: make test-py39)

PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.habitat-ver-installed
# habitat-sim wheel and test assets (see CONTRIBUTING.md, "Set-up"):
# installed into the same venv when a wheel is there, skipped otherwise.
HABITAT_SIM_DIR ?= ../shared/habitat-sim
SIM_STAMP := $(VENV)/.habitat-sim-installed
# The main job's config and any extra Hydra overrides, e.g.
#   make demo DEMO_ARGS="habitat_baselines.num_environments=4"
DEMO_CONFIG ?= doom/ver_defend_the_center
DEMO_ARGS ?= habitat_baselines.total_num_steps=40000
PYTEST_ARGS ?=
# Every install step and test session prints its wall and CPU time, and each
# session its slowest tests, so CI logs show where the time goes.
TIMED := .ci/timed
DURATIONS := --durations=15

.PHONY: demo test test-fast test-py39 install clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# Reinstalled only when the package metadata changes.
# Editable in setuptools' strict mode: a tree of links to our files that sits on
# sys.path like an installed wheel, so Hydra finds the plugin in the
# hydra_plugins namespace from any folder (the default editable mode hides it
# from Hydra's scan).  New files need a re-link, hence every source and the
# shipped skill checkpoints as a prerequisite.
SOURCES := $(shell find habitat_ver hydra_plugins configs -name '*.py' -o -name '*.yaml' -o -path '*/skill_checkpoints/*')
EDITABLE := -e '.[test]' --config-settings editable_mode=strict

$(STAMP): $(PY) pyproject.toml setup.py $(SOURCES)
	$(TIMED) "install: habitat-ver into $(VENV)" $(PY) -m pip install --quiet $(EDITABLE)
	touch $(STAMP)

# Once per venv (and again when the wheel changes); a no-op without a wheel.
$(SIM_STAMP): $(STAMP) $(wildcard $(HABITAT_SIM_DIR)/habitat_sim-*.whl)
	$(TIMED) "install: habitat-sim" .ci/install_habitat_sim.sh $(PY) $(HABITAT_SIM_DIR)
	touch $(SIM_STAMP)

install: $(STAMP) $(SIM_STAMP)

demo: $(STAMP)
	$(PY) -m habitat_ver.run --config-name=$(DEMO_CONFIG) $(DEMO_ARGS)

# Lint, format and type checks (config in pyproject.toml); `make test` runs
# them first.  The same three run as pre-commit hooks (.pre-commit-config.yaml).
.PHONY: lint
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# Sessions (CONTRIBUTING.md, "Tests"): everything but `sim` in forced sim-free mode
# (tests/conftest.py), in two runs: the in-process tests, then the `multiproc`
# ones, always one at a time (they kill, hang and signal processes and wait on
# their exits); then the `sim` tests with the real habitat-sim (skipped where it
# is not installed), SIM_TEST_WORKERS (2) at a time: they wait on simulator
# subprocesses more than they compute (one at a time kept 2 cores 60% busy),
# and each group of tests that shares made data runs on one worker
# (tests/conftest.py, DATA_GROUPS); then Python 3.9.  TEST_WORKERS (2) runs
# the in-process and 3.9 tests that many at a time (pytest-xdist), the `slow`
# learning checks first (tests/conftest.py) so the short tests fill the other
# worker meanwhile (quiet, 2 cores: in-process 631 s against 887 s one at a
# time, 3.9 220 s against 341 s); 0 runs each session in one process.
SIM_TEST_ENV := HABITAT_SIM_TEST_ASSETS=$(HABITAT_SIM_DIR)/data/test_assets
TEST_WORKERS ?= 2
SIM_TEST_WORKERS ?= 2
PYTEST := -m pytest -q $(DURATIONS)
XDIST := -n $(TEST_WORKERS) --dist worksteal
SIM_XDIST := -n $(SIM_TEST_WORKERS) --dist loadgroup

test: lint $(STAMP) $(SIM_STAMP)
	$(SIM_TEST_ENV) $(TIMED) "test: not sim, in-process" \
		$(PY) $(PYTEST) $(XDIST) -m "not sim and not multiproc" $(PYTEST_ARGS)
	$(SIM_TEST_ENV) $(TIMED) "test: not sim, multiproc" \
		$(PY) $(PYTEST) -m "not sim and multiproc" $(PYTEST_ARGS)
	$(SIM_TEST_ENV) HABITAT_VER_SIM_FREE=0 $(TIMED) "test: sim" \
		$(PY) $(PYTEST) $(SIM_XDIST) -m sim $(PYTEST_ARGS)
	$(MAKE) test-py39

test-fast: $(STAMP) $(SIM_STAMP)
	$(SIM_TEST_ENV) $(TIMED) "test-fast: not sim, in-process" \
		$(PY) $(PYTEST) $(XDIST) -m "not slow and not sim and not multiproc" $(PYTEST_ARGS)
	$(SIM_TEST_ENV) $(TIMED) "test-fast: not sim, multiproc" \
		$(PY) $(PYTEST) -m "not slow and not sim and multiproc" $(PYTEST_ARGS)
	$(SIM_TEST_ENV) HABITAT_VER_SIM_FREE=0 $(TIMED) "test-fast: sim" \
		$(PY) $(PYTEST) $(SIM_XDIST) -m "sim and not slow" $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) $(VENV39) build dist *.egg-info outputs

# Python 3.9, the version habitat-lab's own conda instructions use, in its own
# venv on the oldest torch we support (.ci/py39-constraints.txt), so the lower
# bounds in pyproject.toml stay tested.  Its job is syntax and those lower
# bounds, so it runs the in-process fast suite: every module imports
# (tests/test_every_module_imports.py), every config composes, the torch math,
# storages, policies and checkpoints, and real short training runs of every
# trainer with their env worker processes.  Left to 3.11: the `slow` learning
# checks and the `multiproc` tests (process faults, kills, signals, 2-rank
# torchrun), which test our process handling, not the 3.9 stdlib or old torch,
# and spend most of their time waiting on process exits; and the command-line
# error tests (tests/test_run_cli.py), where each test starts a fresh
# interpreter to print one line (106 of the 3.9 session's 330 s).  pyenv's shim needs
# PYENV_VERSION to expose python3.9 when the global version is 3.11.
PYTHON39 ?= python3.9
VENV39 ?= .venv39
PY39 := $(VENV39)/bin/python
STAMP39 := $(VENV39)/.habitat-ver-installed

# 3.9's bundled setuptools (58) cannot build our pyproject without isolation.
$(PY39):
	PYENV_VERSION=$${PYENV_VERSION:-3.9} $(PYTHON39) -m venv $(VENV39)
	$(PY39) -m pip install --quiet --upgrade pip 'setuptools>=68' wheel

$(STAMP39): $(PY39) pyproject.toml setup.py .ci/py39-constraints.txt $(SOURCES)
	$(TIMED) "install: habitat-ver into $(VENV39)" \
		$(PY39) -m pip install --quiet -c .ci/py39-constraints.txt $(EDITABLE)
	touch $(STAMP39)

test-py39: $(STAMP39)
	$(TIMED) "test-py39: in-process, not slow" \
		$(PY39) $(PYTEST) $(XDIST) -m "not slow and not multiproc" \
		--ignore=tests/test_run_cli.py $(PYTEST_ARGS)
