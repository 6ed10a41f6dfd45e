# habitat-ver: every set-up step lives here, so a fresh machine needs only
#   make demo   (train VER on the embedded default environment)
#   make test   (the whole test suite, slow learning checks included)

PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.habitat-ver-installed
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

install: $(STAMP)

demo: $(STAMP)
	$(PY) -m habitat_ver.run --config-name=$(DEMO_CONFIG) $(DEMO_ARGS)

test: $(STAMP)
	$(PY) -m pytest -q $(PYTEST_ARGS)

test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow" $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) build dist *.egg-info outputs
