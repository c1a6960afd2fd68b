# The two commands a user needs: `make demo` and `make test`. Both set up .venv first.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-fast proto bench bench-math bench-rm clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, pinned: this machine ships the CPU build on disk; unpinned pulls CUDA.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

# Regenerate the Python code for proto/ (committed; a test fails when it drifts).
proto: $(STAMP)
	$(PY) -m reward_service.proto_gen

demo: $(STAMP)
	$(PY) examples/demo.py

test: $(STAMP)
	$(PY) -m pytest -q

test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow"

bench: bench-math bench-rm

bench-math: $(STAMP)
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) bench/bench_math.py

# Reward model: training vs TRL's RewardTrainer, serving with vs without dynamic batching.
bench-rm: $(STAMP)
	$(PY) -m pip install -q -e '.[bench-rm]'
	HF_HUB_OFFLINE=1 $(PY) bench/bench_rm_training.py
	HF_HUB_OFFLINE=1 $(PY) bench/bench_rm_serving.py

clean:
	rm -rf $(VENV) build *.egg-info
