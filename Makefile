# The commands people and CI run. `make test` and `make demo` set everything up themselves.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEPS := $(VENV)/.deps-installed
GPU_WHEEL_DIR := .gpu-wheel
GPU_PYTHON_VERSION ?= 3.12
# release for CI and wheels; `iter` (Cargo.toml) rebuilds in seconds while working
PROFILE ?= release
export CARGO_TERM_COLOR := never

.PHONY: demo test lint develop rust-test py-test docs sdist-test gpu-wheel gpu-test bench bench-generated-struphy cupy-fusion-suite cuda-samples real-users clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(DEPS): requirements/test.txt requirements/docs.txt | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements/test.txt
	touch $@

# Builds the extension (release) into the virtual environment.
develop: $(DEPS)
	VIRTUAL_ENV=$(abspath $(VENV)) $(BIN)/maturin develop --profile $(PROFILE) -q

lint: $(DEPS)
	cargo fmt --all --check
	cargo clippy --workspace --all-targets -q -- -D warnings
	$(BIN)/ruff check python tests benches examples scripts
	$(BIN)/ruff format --check python tests benches examples scripts

rust-test:
	cargo test --workspace --exclude cunumpy-py

py-test: develop
	$(BIN)/python -m pytest -ra

# The documentation site (mkdocs.yml) into site/, strict: any warning, broken link or public
# name without a docstring fails.
docs: develop
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(BIN)/mkdocs build --strict --clean --quiet

# Builds the sdist, installs it into a fresh virtual environment (a build with only Rust and a
# C++ compiler), imports it and runs one emulated kernel (scripts/sdist-check).
sdist-test: $(DEPS)
	PATH=$(abspath $(BIN)):$$PATH nice -n 10 bash scripts/sdist-check

test: lint rust-test py-test docs sdist-test

demo: develop
	$(BIN)/python examples/demo.py
	$(BIN)/python examples/particle_pusher/walkthrough.py

# The manylinux2014 abi3 wheel for the GPU machine (no network there), plus the pure-Python
# dependencies it lacks.
gpu-wheel: $(DEPS)
	$(BIN)/python -m pip install -q ziglang==0.17.1
	rm -rf $(GPU_WHEEL_DIR) && mkdir -p $(GPU_WHEEL_DIR)
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/maturin build --profile $(PROFILE) --zig --compatibility manylinux2014 -q --out $(GPU_WHEEL_DIR)
	$(BIN)/python -m pip download -q --no-deps --only-binary=:all: -d $(GPU_WHEEL_DIR) array-api-compat==1.16.0 maybempi==0.1.2
	# mpi4py and the MPICH wheel (mpiexec, libmpi) for the GPU machine's Python, in mpi/:
	# scripts/gpu-check installs them with --prefix (libmpi and mpiexec are data files).
	$(BIN)/python -m pip download -q --no-deps --only-binary=:all: --implementation cp \
	  --python-version $(GPU_PYTHON_VERSION) --platform manylinux_2_28_x86_64 \
	  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
	  -d $(GPU_WHEEL_DIR)/mpi mpi4py==4.1.2 mpich==5.0.2

# Runs the GPU check here (on a machine with a GPU and the wheel built by gpu-wheel).
gpu-test:
	bash scripts/gpu-check $(GPU_WHEEL_DIR) $${OUT:-gpu-results}

bench: develop
	$(BIN)/python benches/run_all.py

# Generated vs hand-written CUDA on struphy's and feectools' kernels (the cases of
# scripts/port_parity.py), on the emulated device at a small n (minutes on two cores; on the GPU
# scripts/gpu-check runs it with GPU_CHECK_STRUPHY_SITE). STRUPHY_SITE: a `pip install --target`
# folder of struphy 3.5.0 and feectools 0.10.0 (`make .portsite` makes one; never committed).
STRUPHY_SITE ?= .portsite
bench-generated-struphy: develop
	$(BIN)/python benches/generated_cuda_struphy.py $(STRUPHY_SITE) --device emulated $(BENCH_GENERATED_STRUPHY_ARGS)

.portsite:
	$(BIN)/python -m pip install -q --no-deps --no-compile --target .portsite struphy==3.5.0 feectools==0.10.0

# CuPy's own fusion tests against cunumpy's fuse, on NumPy and on the emulated device:
# CUPY_FUSION_TESTS=<cupy checkout>/tests/cupy_tests/core_tests/fusion_tests (skips without)
cupy-fusion-suite: develop
	$(BIN)/python scripts/cupy_fusion_suite.py $(CUPY_FUSION_TESTS) $(CUPY_FUSION_ARGS)

# Kernels of NVIDIA's CUDA samples through CudaKernel, against NumPy, on the emulated device and
# (with a GPU) on CuPy; prints a JSON summary: CUDA_SAMPLES=<clone of NVIDIA/cuda-samples>
cuda-samples: develop
	$(BIN)/python scripts/cuda_samples.py $(CUDA_SAMPLES) $(CUDA_SAMPLES_ARGS)

# The four published packages built on cunumpy 0.7 (struphy, feectools, mpiarray, plasmacoll):
# their own test suites on cunumpy 0.7.1 and on this checkout, side by side. Hours on two cores;
# not part of `make test`. Options: REAL_USERS_ARGS="--packages plasmacoll --envs project ...".
real-users: $(DEPS)
	$(BIN)/python scripts/real-users $(REAL_USERS_ARGS)

clean:
	rm -rf $(VENV) target $(GPU_WHEEL_DIR) site
