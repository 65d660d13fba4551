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

.PHONY: lab test lint unit notebooks bench mutation clean
LINTED := course_utils tools tests benchmarks lessons conftest.py

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install -r requirements.txt
	$(BIN)/python -m pip install --no-deps -e .
	touch $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab $(ROOT_ARGS) --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/notebooks/00_welcome.ipynb $(LAB_ARGS)

# Lint, then unit + doctests, then every notebook in notebooks/ and solutions/ re-executed and compared.
test: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/python -m pytest -n 2 --dist loadscope $(NBVAL) tests course_utils tools notebooks solutions $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check $(LINTED)

unit: $(STAMP)
	$(BIN)/python -m pytest -n 2 tests course_utils tools $(PYTEST_ARGS)

# Contributors: generate solutions/ and notebooks/ from lessons/ and execute them.
# `make notebooks NB=01` limits it to one lesson (both notebooks).
notebooks: $(STAMP)
	$(BIN)/python -m tools.authoring build $(NB)

bench: $(STAMP)
	$(BIN)/python benchmarks/run_notebooks.py

# Mutation gate: every mutant of every reference solution rejected or listed as equivalent (tools/mutation.py).
# `make mutation MUTATION_ARGS="--only 03 --jobs 2"`.
MUTATION_ARGS ?= --jobs 2 --quiet
mutation: $(STAMP)
	$(BIN)/python -m tools.mutation $(MUTATION_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache runs
