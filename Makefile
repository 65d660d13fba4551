# Two commands do all set-up: `make lab` and `make test` (see README.md).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Extra arguments for JupyterLab, e.g. `make lab LAB_ARGS="--no-browser --port 8890"`.
LAB_ARGS ?=
# Jupyter refuses to start as root (containers, CI machines) unless told it is intended.
ROOT_ARGS := $(if $(filter 0,$(shell id -u)),--allow-root,)
# Extra arguments for pytest, e.g. `make test PYTEST_ARGS="-k hygiene"`.
PYTEST_ARGS ?=
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg

.PHONY: lab test unit notebooks bench clean

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install -r requirements.txt
	$(BIN)/python -m pip install --no-deps -e .
	touch $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab $(ROOT_ARGS) --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/notebooks/00_welcome.ipynb $(LAB_ARGS)

# Unit + doctests, then every notebook in notebooks/ and solutions/ re-executed and compared.
test: $(STAMP)
	$(BIN)/python -m pytest -n 2 --dist loadscope $(NBVAL) tests course_utils notebooks solutions $(PYTEST_ARGS)

unit: $(STAMP)
	$(BIN)/python -m pytest -n 2 tests course_utils $(PYTEST_ARGS)

# Contributors: regenerate learner notebooks from solutions/ and re-execute them in place.
# `make notebooks NB=01` limits it to one notebook (both versions).
notebooks: $(STAMP)
	$(BIN)/python -m course_utils.authoring all $(NB)

bench: $(STAMP)
	$(BIN)/python benchmarks/run_notebooks.py

clean:
	rm -rf $(VENV) .pytest_cache runs
