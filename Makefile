# Two commands do all set-up: `make lab` and `make test` (see README.md).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# `make lab TORCH=cpu`: torch and torchvision from PyTorch's CPU wheel index (smaller download,
# no CUDA libraries), the same versions as requirements.txt; everything else from PyPI.
# Decided when .venv is first created (`make clean` to switch).
TORCH ?= default
CPU_INDEX  := https://download.pytorch.org/whl/cpu
TORCH_PINS := $(shell grep -E '^(torch|torchvision)==' requirements.txt)
ifeq ($(TORCH),cpu)
TORCH_STEP := $(BIN)/python -m pip install --index-url $(CPU_INDEX) $(TORCH_PINS)
else ifeq ($(TORCH),default)
TORCH_STEP := @echo "torch: from PyPI (on Linux the CUDA build, about 2.9 GB; \`make clean lab TORCH=cpu\` for the CPU build)"
else
$(error TORCH must be `cpu` or `default`, found `$(TORCH)`)
endif
# Your working copies: `make lab` copies notebooks/ here once (git ignores work/), never overwrites.
# `make lab EDITION=zh`: the Chinese edition (README.zh-CN.md): zh/notebooks copied to work-zh/.
EDITION ?= en
ifeq ($(EDITION),zh)
WORK := work-zh
SOURCE_NOTEBOOKS := zh/notebooks
else ifeq ($(EDITION),en)
WORK := work
SOURCE_NOTEBOOKS := notebooks
else
$(error EDITION must be `en` or `zh`, found `$(EDITION)`)
endif
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings
# Extra arguments for JupyterLab, e.g. `make lab LAB_ARGS="--no-browser --port 8890"`.
LAB_ARGS ?=
# Jupyter refuses to start as root (containers, CI machines) unless told it is intended.
ROOT_ARGS := $(if $(filter 0,$(shell id -u)),--allow-root,)
# Extra arguments for pytest, e.g. `make test PYTEST_ARGS="-k hygiene"`.
PYTEST_ARGS ?=
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg

.PHONY: lab work reset test lint unit notebooks bench mutation nbgrader site clean test-py313 test-spawn test-oldest-torch
LINTED := course_utils tools tests benchmarks lessons conftest.py

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(TORCH_STEP)
	$(BIN)/python -m pip install -r requirements.txt
	$(BIN)/python -m pip install --no-deps -e .
	mkdir -p $(LAB_SETTINGS) && cp binder/overrides.json $(LAB_SETTINGS)/overrides.json
	touch $(STAMP)

lab: $(STAMP) work
	$(BIN)/jupyter lab $(ROOT_ARGS) --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/$(WORK)/00_welcome.ipynb $(LAB_ARGS)

# Copies every notebook that work/ does not have yet (a new lesson after `git pull` too).
work:
	@mkdir -p $(WORK)
	@for nb in $(SOURCE_NOTEBOOKS)/*.ipynb; do \
	  if [ ! -e "$(WORK)/$${nb##*/}" ]; then cp "$$nb" "$(WORK)/" && echo "new working copy: $(WORK)/$${nb##*/}"; fi; \
	done

# `make reset NB=03`: a fresh copy of notebooks/03_*.ipynb in work/. Your old copy is never deleted: it is
# kept as work/03_*.bak1.ipynb, the next reset's as .bak2, ... (the first free number; the name is printed).
reset:
	@echo "$(NB)" | grep -Eq '^[0-9][0-9]$$' || { echo "usage: make reset NB=03 (two digits)"; exit 2; }
	@set -e; for nb in $(SOURCE_NOTEBOOKS)/$(NB)_*.ipynb; do \
	  test -e "$$nb" || { echo "no notebook $(SOURCE_NOTEBOOKS)/$(NB)_*.ipynb"; exit 2; }; \
	  name=$${nb##*/}; mkdir -p $(WORK); \
	  if [ -e "$(WORK)/$$name" ]; then \
	    n=1; while [ -e "$(WORK)/$${name%.ipynb}.bak$$n.ipynb" ]; do n=$$((n + 1)); done; \
	    mv "$(WORK)/$$name" "$(WORK)/$${name%.ipynb}.bak$$n.ipynb"; \
	    echo "your copy is kept as $(WORK)/$${name%.ipynb}.bak$$n.ipynb"; fi; \
	  cp "$$nb" "$(WORK)/$$name" && echo "fresh copy: $(WORK)/$$name"; \
	done

# Lint, then unit + doctests, then every notebook of both editions (notebooks/, solutions/, zh/notebooks/,
# zh/solutions/) re-executed and compared.
test: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/python -m pytest -n 2 --dist loadscope $(NBVAL) tests course_utils tools notebooks solutions \
	  $(wildcard zh/notebooks zh/solutions) $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check $(LINTED)

unit: $(STAMP)
	$(BIN)/python -m pytest -n 2 tests course_utils tools $(PYTEST_ARGS)

# Contributors: generate solutions/ and notebooks/ from lessons/, and the Chinese edition's zh/solutions/ and
# zh/notebooks/ from lessons/ + lessons/zh_CN/*.po (tools/translate.py), and execute them.
# `make notebooks NB=01` limits it to one lesson (its four notebooks).
notebooks: $(STAMP)
	$(BIN)/python -m tools.authoring build $(NB)
	$(BIN)/python -m tools.translate build $(NB)

# Instructors (docs/instructors.md): nbgrader, from requirements-instructor.txt, for `make test` too.
INSTRUCTOR_STAMP := $(VENV)/.installed-instructor
$(INSTRUCTOR_STAMP): $(STAMP) requirements-instructor.txt
	$(BIN)/python -m pip install -r requirements-instructor.txt
	touch $(INSTRUCTOR_STAMP)
test unit: $(INSTRUCTOR_STAMP)

# An nbgrader course folder from lessons/: $(NBGRADER_DIR)/source/NN_topic/NN_topic.ipynb (git ignores build/).
# `make nbgrader NB=03` exports one lesson; NBGRADER_ARGS="--points 2 --timeout 300".
# `make nbgrader EDITION=zh`: the Chinese notebooks, into build/nbgrader-zh.
NBGRADER_DIR ?= build/nbgrader$(if $(filter zh,$(EDITION)),-zh,)
NBGRADER_ARGS ?=
nbgrader: $(INSTRUCTOR_STAMP)
	$(BIN)/python -m tools.nbgrader_export --edition $(EDITION) --out $(NBGRADER_DIR) $(NBGRADER_ARGS) $(NB)

# The website: build/site from the executed notebooks, never re-executed.
# Sphinx + myst-nb from requirements-site.txt (into .venv); MathJax and the widget manager from the npm
# registry (site/package-lock.json, needs npm). `python -m http.server -d build/site` to read it locally.
# No torch needed: requirements.txt only constrains the versions the two files share.
SITE_STAMP := $(VENV)/.installed-site
$(SITE_STAMP): requirements-site.txt requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install -r requirements-site.txt -c requirements.txt
	touch $(SITE_STAMP)

site: $(SITE_STAMP)
	$(BIN)/python -m tools.site

# check_times first: its table (benchmarks/results/check_times.md) goes into RESULTS.md with the notebooks'.
bench: $(STAMP)
	status=0; $(BIN)/python benchmarks/check_times.py || status=1; \
	$(BIN)/python benchmarks/run_notebooks.py || status=1; exit $$status

# Mutation gate: every mutant of every reference solution rejected or listed as equivalent (tools/mutation.py).
# `make mutation MUTATION_ARGS="--only 03 --jobs 2"`.
MUTATION_ARGS ?= --jobs 2 --quiet
mutation: $(STAMP)
	$(BIN)/python -m tools.mutation $(MUTATION_ARGS)

# --- Environments (README "Where the course runs"; CONTRIBUTING gives each leg's time) ----------
# `make test-py313`: the unit tests and every notebook (strict nbval) under the newest supported
# Python, in its own environment .venv313 (git-ignored; about 6 GB, torch from the package registry).
# The browser and website tests and tests/test_environments.py (spawn, no compiler, temporary files) stay on the
# main leg: they test JupyterLab and the platform, not the Python version.
PY313   ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3.13) python3.13)
VENV313 := .venv313
STAMP313 := $(VENV313)/.installed
$(STAMP313): requirements.txt requirements-instructor.txt pyproject.toml
	test -x $(VENV313)/bin/python || $(PY313) -m venv $(VENV313)
	$(VENV313)/bin/python -m pip install --quiet --upgrade pip
	$(VENV313)/bin/python -m pip install -r requirements.txt -r requirements-instructor.txt
	$(VENV313)/bin/python -m pip install --no-deps -e .
	touch $(STAMP313)

test-py313: $(STAMP313)
	$(VENV313)/bin/python -m pytest -n 2 --dist loadscope $(NBVAL) tests course_utils tools notebooks solutions \
	  --ignore tests/test_browser.py --ignore tests/test_environments.py --ignore tests/test_site.py $(PYTEST_ARGS)

# `make test-spawn`: the notebooks that start DataLoader workers or DDP ranks, with every process
# started by spawn as on macOS and Windows (course_utils.netguard.kernel_env reads the variable).
SPAWN_NOTEBOOKS := $(foreach n,05 10 13 14,$(wildcard solutions/$(n)_*.ipynb notebooks/$(n)_*.ipynb))
test-spawn: $(INSTRUCTOR_STAMP)
	COURSE_START_METHOD=spawn $(BIN)/python -m pytest -n 2 --dist loadscope $(NBVAL) $(SPAWN_NOTEBOOKS) $(PYTEST_ARGS)

# `make test-oldest-torch`: every notebook, top to bottom, on the oldest supported torch
# (OLDEST_TORCH, README), in its own environment .venv-oldest (git-ignored). Errors fail; printed
# numbers may differ from the saved outputs (nbval-lax compares only cells marked for it).
OLDEST_TORCH := torch==2.9.1 torchvision==0.24.1
VENV_OLD := .venv-oldest
STAMP_OLD := $(VENV_OLD)/.installed
$(STAMP_OLD): requirements.txt pyproject.toml
	test -x $(VENV_OLD)/bin/python || $(PYTHON) -m venv $(VENV_OLD)
	$(VENV_OLD)/bin/python -m pip install --quiet --upgrade pip
	grep -vE '^(torch|torchvision)==' requirements.txt > $(VENV_OLD)/requirements-no-torch.txt
	$(VENV_OLD)/bin/python -m pip install $(OLDEST_TORCH) -r $(VENV_OLD)/requirements-no-torch.txt
	$(VENV_OLD)/bin/python -m pip install --no-deps -e .
	touch $(STAMP_OLD)

test-oldest-torch: $(STAMP_OLD)
	$(VENV_OLD)/bin/python -m pytest -n 2 --dist loadscope --nbval-lax --nbval-current-env notebooks solutions $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) $(VENV313) $(VENV_OLD) .pytest_cache runs
