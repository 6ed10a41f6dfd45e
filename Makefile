# habitat-ver: every set-up step lives here, so a fresh machine needs only
#   make demo   (train VER on the embedded default environment)
#   make test   (the whole test suite, slow learning checks included)

PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.habitat-ver-installed
# habitat-sim wheel and test assets (see README, "habitat-sim and PointNav"):
# installed into the same venv when a wheel is there, skipped otherwise.
HABITAT_SIM_DIR ?= ../shared/habitat-sim
SIM_STAMP := $(VENV)/.habitat-sim-installed
# The main job's config and any extra Hydra overrides, e.g.
#   make demo DEMO_ARGS="habitat_baselines.num_environments=4"
DEMO_CONFIG ?= doom/ver_my_way_home
DEMO_ARGS ?= habitat_baselines.total_num_steps=40000
PYTEST_ARGS ?=

.PHONY: demo test test-fast install clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# Reinstalled only when the package metadata changes.
$(STAMP): $(PY) pyproject.toml setup.py
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# Once per venv (and again when the wheel changes); a no-op without a wheel.
$(SIM_STAMP): $(STAMP) $(wildcard $(HABITAT_SIM_DIR)/habitat_sim-*.whl)
	.ci/install_habitat_sim.sh $(PY) $(HABITAT_SIM_DIR)
	touch $(SIM_STAMP)

install: $(STAMP) $(SIM_STAMP)

demo: $(STAMP)
	$(PY) -m habitat_ver.run --config-name=$(DEMO_CONFIG) $(DEMO_ARGS)

test: $(STAMP) $(SIM_STAMP)
	HABITAT_SIM_TEST_ASSETS=$(HABITAT_SIM_DIR)/data/test_assets $(PY) -m pytest -q $(PYTEST_ARGS)

test-fast: $(STAMP) $(SIM_STAMP)
	HABITAT_SIM_TEST_ASSETS=$(HABITAT_SIM_DIR)/data/test_assets $(PY) -m pytest -q -m "not slow" $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build dist *.egg-info outputs
