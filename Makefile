# TempoKV entry point. `make test` and `make run` install the packages they need (scripts/deps.sh);
# `make install` installs TempoKV itself and never runs the package manager.
BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_TSAN ?= build-tsan
PREFIX     ?= /usr/local
JOBS       ?= $(shell nproc)
PY         := /usr/bin/python3
CMAKE_GEN  := -G Ninja

.PHONY: all deps build test test-normal test-asan test-tsan run run-sim bench format format-check clean

all: build

deps:
	@scripts/deps.sh core plots model uring engines

# configure DIR [extra cmake args]
define configure
	@[ -f $(1)/build.ninja ] || cmake -S . -B $(1) $(CMAKE_GEN) $(2) >/dev/null
endef

# reconfigure DIR [extra cmake args]: configure even a configured tree, for targets whose
# packages arrive after it was configured (librados: the tree `make build` configured before
# `make test-cluster` installed it has no cluster targets; a NOTFOUND library is searched again)
define reconfigure
	@cmake -S . -B $(1) $(CMAKE_GEN) $(2) >/dev/null
endef

build: deps
	$(call configure,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo)
	@cmake --build $(BUILD) -j $(JOBS)

test-normal: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -L unit

test-asan: deps
	$(call configure,$(BUILD_ASAN),-DCMAKE_BUILD_TYPE=Debug -DTEMPO_SANITIZE=address)
	@cmake --build $(BUILD_ASAN) -j $(JOBS) --target unit_tests
	@cd $(BUILD_ASAN) && ctest --output-on-failure -j $(JOBS) -L unit

# ThreadSanitizer run of the suites that exercise concurrent code (label "concurrent").
test-tsan: deps
	$(call configure,$(BUILD_TSAN),-DCMAKE_BUILD_TYPE=Debug -DTEMPO_SANITIZE=thread)
	@cmake --build $(BUILD_TSAN) -j $(JOBS) --target concurrent_tests
	@cd $(BUILD_TSAN) && ctest --output-on-failure -j $(JOBS) -L concurrent

test: format-check test-normal test-asan test-tsan test-cluster test-fuzz
	@echo "make test: all suites passed (normal, ASan+UBSan, TSan, cluster)"

# The main job: Figure 5's fast-tier capacity sweep (100, 50, 25 GiB, the budget half) on
# the uring device, real O_DIRECT reads from an object store under $(BUILD) (written on the
# first run, reused after) into a DRAM fast tier, every policy and dax-l1 (at 100 GiB only:
# it does not depend on the fast tier here). Objects 1/RUN_BYTE_SCALE of the model's; the
# emulated GPU, its link, the arrivals and the timers RUN_SPEEDUP times as fast, results in
# the model's time (Documentation/reproduction.md, "The main job").
RUN_REQUESTS   ?= 80
RUN_RATE       ?= 1.0
RUN_BYTE_SCALE ?= 64
RUN_SPEEDUP    ?= 8
run: build
	@$(BUILD)/tools/tempo-replay/tempo-replay -e fig5 --device uring --store $(BUILD)/replay-store \
	  --byte-scale $(RUN_BYTE_SCALE) --speedup $(RUN_SPEEDUP) --documents $(RUN_REQUESTS) \
	  --rate $(RUN_RATE) -p demand,immediate,queue-1,queue-4,tempo-static,tempo,tempo-risk,dax-l1 \
	  --out $(BUILD)/run
	@scripts/deps.sh plots
	@$(PY) -B scripts/figures/sweep.py $(BUILD)/run --byte-scale $(RUN_BYTE_SCALE)

# The same comparison in virtual time on the sim device (seconds, bit-for-bit repeatable).
run-sim: build
	@$(BUILD)/tools/tempo-replay/tempo-replay --default-comparison --out $(BUILD)/run
	@$(MAKE) --no-print-directory run-figures

bench: build
	@scripts/bench.sh $(BUILD)

# The install targets are in mk/integration.mk (`make install`, `make uninstall`).

FORMAT_FILES = $(shell git ls-files '*.cc' '*.h' '*.c')
format:
	@clang-format -i $(FORMAT_FILES)

format-check: deps
	@clang-format --dry-run --Werror $(FORMAT_FILES)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN)

# Components add their targets (kmod, vm-test, ebpf, ...) in mk/*.mk.
-include $(wildcard mk/*.mk)
