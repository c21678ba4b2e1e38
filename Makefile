# ppsim: the two commands a newcomer types are `make run` and `make test`.
# Both install the Debian packages that are missing, configure, build and run.

# iproute2: the test that runs `ppsim execute` across network namespaces; clang-14 and its
# runtime: the libFuzzer targets (fuzz/).
PACKAGES := cmake make g++ pkg-config libboost-graph-dev nlohmann-json3-dev catch2 libfmt-dev \
            libcli11-dev libdnnl-dev libbenchmark-dev openmpi-bin libopenmpi-dev \
            pybind11-dev python3-dev python3-pytest dpkg-dev libcpp-httplib-dev iproute2 clang-14 \
            libclang-rt-14-dev zlib1g-dev
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
JOBS ?= 2
BUILD := build/dev
ASAN := build/asan
# Every cmake call holds one lock, so that two make targets started at once in one checkout
# configure and build one after the other instead of racing on build/ ("Could NOT find MPI").
CMAKE = mkdir -p build && flock build/.cmake.lock cmake
RELEASE := build/release
PPSIM := $(BUILD)/ppsim

.PHONY: all deps ppsim programs build python install deb run test test-unit test-programs test-asan bench clean check-baselines docs-check test-browser browser-deps fuzz fuzz-build test-fuzz

all: build

# Install only what is missing; `apt-get update` only when something is.
deps:
	@missing=""; for p in $(PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y $$missing; \
	fi

# The ppsim executable only: what `make run` needs (the tests are built by `make test`).
ppsim: deps
	$(CMAKE) --preset dev
	$(CMAKE) --build $(BUILD) -j $(JOBS) --target ppsim

build: deps
	$(CMAKE) --preset dev
	$(CMAKE) --build $(BUILD) -j $(JOBS)

# The Python module into build/python: `PYTHONPATH=build/python python3 -c 'import ppsim'`.
python: deps
	$(CMAKE) --preset dev
	$(CMAKE) --build $(BUILD) -j $(JOBS) --target ppsim_python

# `make install PREFIX=/usr/local`: the release build, installed (bin, lib, headers, CMake and
# pkg-config files, man page, bash completion, Python module).
PREFIX ?= /usr/local
install: deps
	$(CMAKE) --preset release
	$(CMAKE) --build $(RELEASE) -j $(JOBS)
	$(CMAKE) --install $(RELEASE) --prefix $(PREFIX)

# A Debian package of the release build: build/release/ppsim_*.deb.
deb: deps
	$(CMAKE) --preset release -DCMAKE_INSTALL_PREFIX=/usr
	$(CMAKE) --build $(RELEASE) -j $(JOBS)
	cd $(RELEASE) && cpack -G DEB

# The main job: calibrate the zero-bubble MLP's GEMMs on this CPU (oneDNN, one thread per
# simulated device), then compare 1F1B, ZB-H1 and ZB-H2 at p = 4, m = 8 on those costs: the table
# on stdout; Chrome traces, the HTML report and the metrics JSON under out/.
# `make run COSTS=data/costs/example-mlp.json` skips the calibration and uses a committed profile.
COSTS ?= out/costs.json
RUN_ARGS := -s 1f1b,zb-h1,zb-h2 -p 4 -m 8 --costs-file $(COSTS)
run: ppsim
	@mkdir -p out
	@if [ "$(COSTS)" = out/costs.json ]; then \
	  echo "calibrating on this CPU (dim 1024, tokens 1024, 2 blocks per stage, 4 stages, 1 thread)"; \
	  $(PPSIM) calibrate --dim 1024 --tokens 1024 --blocks 2 --stages 4 --threads 1 -o out/costs.json; \
	fi
	$(PPSIM) compare $(RUN_ARGS) --trace out/trace.json --html out/report.html
	$(PPSIM) compare $(RUN_ARGS) --json > out/metrics.json.tmp && mv out/metrics.json.tmp out/metrics.json
	@echo "wrote out/costs.json, out/trace-*.json (open in https://ui.perfetto.dev or chrome://tracing), out/report.html and out/metrics.json"

test-unit: build
	cd $(BUILD) && ctest --no-tests=error --output-on-failure -j $(JOBS) --output-junit ctest-junit.xml
	@python3 tests/slowest_tests.py $(BUILD)/ctest-junit.xml

# The programs of the dev build, without the unit-test executable.
programs: deps
	$(CMAKE) --preset dev
	$(CMAKE) --build $(BUILD) -j $(JOBS) --target ppsim ppsim_full ppsim_python ppsim_docs

# What `make test` runs on the dev build: the tests of whole programs (CTest label `programs`:
# the README's figures, execute on MPI ranks, the front, Python, the package, the architecture).
# The unit tests run once, under the sanitizers (test-asan); `make test-unit` runs both kinds on
# the dev build.
test-programs: programs
	cd $(BUILD) && ctest --no-tests=error --output-on-failure -j $(JOBS) -L programs --output-junit ctest-programs-junit.xml
	@python3 tests/slowest_tests.py $(BUILD)/ctest-programs-junit.xml

test-asan: deps
	$(CMAKE) --preset asan
	$(CMAKE) --build $(ASAN) -j $(JOBS)
	cd $(ASAN) && ASAN_OPTIONS=detect_leaks=1 ctest --no-tests=error --output-on-failure -j $(JOBS) --output-junit ctest-junit.xml
	@python3 tests/slowest_tests.py $(ASAN)/ctest-junit.xml

# Every figure of the README that a command gives, rerun and compared (tests/docs/docs_check.py),
# with the hidden unit tests behind its counts.
docs-check: build
	python3 tests/docs/docs_check.py $(PPSIM) README.md
	$(BUILD)/ppsim_tests "[.readme]"

# CI regression of bubble metrics: every committed baseline must hold (exit 1 names the case).
check-baselines: programs
	@for f in data/baselines/*.json; do echo "ppsim check --baseline $$f"; \
	  out=$$($(PPSIM) check --baseline $$f) || { echo "$$out"; exit 1; }; done

# The browser tests need Debian's Chromium, Node.js and npm (installed only when missing; a
# missing browser fails the tests), and playwright-core from the npm registry into
# build/browser/node_modules, only when it is not there yet. Playwright drives /usr/bin/chromium:
# it never downloads a browser of its own.
BROWSER_MODULES := build/browser/node_modules
PLAYWRIGHT_VERSION ?= 1.65.1
browser-deps:
	@missing=""; command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	command -v node >/dev/null 2>&1 || missing="$$missing nodejs"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; $(SUDO) apt-get update && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y --no-install-recommends $$missing; fi
	@[ -f $(BROWSER_MODULES)/playwright-core/package.json ] || { mkdir -p build/browser && \
	  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix build/browser --no-audit --no-fund \
	    --no-save playwright-core@$(PLAYWRIGHT_VERSION); }

# The reports and the playground in a real browser; screenshots go to build/browser-artefacts.
test-browser: programs browser-deps
	tests/browser/report_test.sh $(PPSIM)
	PPSIM_NODE_MODULES=$(BROWSER_MODULES) node tests/browser/report_test.mjs $(PPSIM) build/browser-artefacts
	PPSIM_NODE_MODULES=$(BROWSER_MODULES) node tests/browser/playground_test.mjs $(PPSIM) build/browser-artefacts

# libFuzzer targets of the input readers (fuzz/): `make fuzz FUZZ_SECONDS=600` runs each for that
# long; `make test` runs a smoke of FUZZ_SMOKE_SECONDS each, two at a time, so that CI fails on a
# new crash. Findings land in build/fuzz/crashes/ (rerun one: build/fuzz/fuzz_TARGET FILE).
FUZZ := build/fuzz
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 10
FUZZ_TARGETS := schedule_csv schedule_json cost_file baseline_file cli_text model_file device_file layout trace
fuzz-build: deps
	$(CMAKE) -S fuzz -B $(FUZZ) -DCMAKE_CXX_COMPILER=clang++-14
	$(CMAKE) --build $(FUZZ) -j $(JOBS)

fuzz: fuzz-build
	fuzz/run.sh $(FUZZ) $(FUZZ_SECONDS) $(JOBS) $(FUZZ_TARGETS)

test-fuzz: fuzz-build
	fuzz/run.sh $(FUZZ) $(FUZZ_SMOKE_SECONDS) $(JOBS) $(FUZZ_TARGETS)

test: test-programs test-asan check-baselines test-browser test-fuzz

bench: deps
	$(CMAKE) --preset release
	$(CMAKE) --build $(RELEASE) -j $(JOBS)
	$(RELEASE)/ppsim_bench

clean:
	rm -rf build out
