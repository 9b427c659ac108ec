# Tiered KV placement study (issues 7, 16): tempo-sim's experiment grids as CSV, then one PNG
# per figure (Debian's matplotlib under /usr/bin/python3). The physical-shape experiments
# replay a generated 24,000-request conversation trace (scripts/bench/tempo_sim_trace.py).
# About 25 s of CPU on one core (a minute of wall time on the loaded 2-core build machine).
PLACEMENT_BUILD ?= $(BUILD)
PLACEMENT_OUT   ?= $(PLACEMENT_BUILD)/placement-study
PLACEMENT_SEED  ?= 1

.PHONY: placement-study placement-bench placement-vs-libcachesim

placement-study: deps
	$(call configure,$(PLACEMENT_BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo)
	@cmake --build $(PLACEMENT_BUILD) -j $(JOBS) --target tempo-sim
	@mkdir -p $(PLACEMENT_OUT)
	@$(PY) scripts/bench/tempo_sim_trace.py $(PLACEMENT_OUT)/conversation.jsonl 24000
	@$(PLACEMENT_BUILD)/tools/tempo-sim/tempo-sim study --out $(PLACEMENT_OUT) --seed $(PLACEMENT_SEED) \
	  --trace $(PLACEMENT_OUT)/conversation.jsonl
	@for s in scripts/figures/placement/fig_*.py; do $(PY) $$s $(PLACEMENT_OUT) || exit 1; done

# Simulator and per-policy throughput (block accesses per second of CPU time, one core).
placement-bench: deps
	$(call configure,$(PLACEMENT_BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo)
	@cmake --build $(PLACEMENT_BUILD) -j $(JOBS) --target bench_placement
	@$(PLACEMENT_BUILD)/tests/placement/bench_placement --benchmark_min_time=0.5

# tempo-sim against libCacheSim's cachesim on the same 637,836-access stream, side by side
# (builds libCacheSim in $(PLACEMENT_BUILD)/libcachesim-bench; says SKIP without network).
placement-vs-libcachesim: deps
	@scripts/bench/tempo_sim_vs_libcachesim.sh $(PLACEMENT_BUILD)
