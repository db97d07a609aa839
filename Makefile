# make run / make test from a fresh clone: create or reuse .venv, install, then act.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run
# pytest-xdist workers for `make test`: one a core, at most this many (each compiles the kernels
# it needs on a cold cache and holds its own Qt application, a few hundred MB).
TEST_WORKERS ?= 4

.PHONY: run test test-fast bench mutation smoke lint clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# `make run` installs what the app needs; `make test` adds the test tools. (The warnings filter
# quietens setuptools' notice about editable installs, printed on every install.)
PIP_INSTALL := PYTHONWARNINGS=ignore::UserWarning $(PY) -m pip install --quiet \
	--disable-pip-version-check

$(RUN_STAMP): pyproject.toml | $(PY)
	$(PIP_INSTALL) -e .
	touch $(RUN_STAMP)

$(STAMP): pyproject.toml | $(PY)
	$(PIP_INSTALL) -e ".[test]"
	touch $(STAMP) $(RUN_STAMP)

run: $(RUN_STAMP)
	$(VENV)/bin/segapp

test: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(VENV)/bin/lint-imports
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -n auto --maxprocesses=$(TEST_WORKERS)

# The fast lane for the edit-test loop: every test not marked slow (docs/testing.md), about a
# minute on two cores once the kernels are compiled. `make test` runs them all.
test-fast: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(PY) -m pytest -q -n auto --maxprocesses=$(TEST_WORKERS) -m "not slow"

bench: $(STAMP)
	$(PY) -m pip install --quiet -e ".[bench]"
	$(PY) benchmarks/table1.py

# Mutation testing (not part of `make test`: several hours on two cores). tools/mutation.py
# runs mutmut per module group in scratch copies under out/mutation/ and resumes where it stopped.
mutation: $(STAMP)
	$(PY) -m pip install --quiet -e ".[mutation]"
	$(PY) tools/mutation.py run
	$(PY) tools/mutation.py report --survivors --out out/mutation.md

# The app in a real X window (Xvfb, xdotool, ImageMagick), driven like a person would; the
# screenshots land in out/smoke/. Not part of `make test`.
smoke: $(RUN_STAMP)
	bash tools/smoke.sh

clean:
	rm -rf $(VENV) build *.egg-info mutants out/mutation
