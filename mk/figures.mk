# The paper's figures reproduced with tempo-replay on the sim device
# (Documentation/reproduction.md). `make figures` runs every experiment into
# $(FIGURES_DIR) and draws its PNG beside the CSVs; `make run-figures` draws compare.png
# for the comparison `make run-sim` wrote into $(BUILD)/run. FIGURE_ARGS adds tempo-replay
# options to every experiment (e.g. FIGURE_ARGS="--seed 2"). `make run` draws its own
# sweep.png (scripts/figures/sweep.py).
FIGURES_DIR        ?= $(BUILD)/figures
FIGURE_ARGS        ?=
FIGURE_EXPERIMENTS := compare fig1 fig2 fig4 fig5 fig6 interference
TEMPO_REPLAY       := $(BUILD)/tools/tempo-replay/tempo-replay

.PHONY: figures figures-doc run-figures tempo-replay-bin

tempo-replay-bin: deps
	$(call configure,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo)
	@cmake --build $(BUILD) -j $(JOBS) --target tempo-replay

figures: tempo-replay-bin
	@for e in $(FIGURE_EXPERIMENTS); do \
	  $(TEMPO_REPLAY) --experiment $$e --out $(FIGURES_DIR) $(FIGURE_ARGS) >/dev/null || exit 1; \
	  $(PY) -B scripts/figures/$$e.py $(FIGURES_DIR) || exit 1; \
	done
	@echo "figures: CSVs and PNGs in $(FIGURES_DIR)/<experiment>/"

# Refreshes the PNGs embedded in Documentation/reproduction.md from a `make figures` run.
figures-doc: figures
	@for e in $(FIGURE_EXPERIMENTS); do cp $(FIGURES_DIR)/$$e/$$e.png Documentation/figures/$$e.png; done
	@echo "figures-doc: Documentation/figures/*.png updated"

run-figures:
	@scripts/deps.sh plots
	@$(PY) -B scripts/figures/compare.py $(BUILD)/run

# The timely grid of issue 30 (Documentation/reproduction.md, "The timely grid"): 144 cells
# of 300 requests (2 models x fast tiers 100/25 GiB x fixed and Poisson arrivals x 3 loads x
# NarrativeQA and LooGLE x 3 seeds) under the seven policies; per policy the cells where it
# is timely, frugal, both and undominated, its worst ratios and C / bound; every cell
# tempo-risk misses, checked against the ones timely_named.csv names. About a minute on two
# quiet cores (TIMELY_JOBS cells side by side); results in $(FIGURES_DIR)/timely-grid/.
TIMELY_JOBS ?= 2
.PHONY: timely-grid
timely-grid: tempo-replay-bin
	@$(PY) -B scripts/figures/timely_grid.py $(TEMPO_REPLAY) $(FIGURES_DIR) --jobs $(TIMELY_JOBS) \
	  --named scripts/figures/timely_named.csv

# Layer-wise readiness (Documentation/engines.md, "Layer-wise readiness in tempo-replay"):
# the fig4 cells x whole-claim readiness and the three layer-wise modes under immediate
# and tempo. Seconds; results in $(FIGURES_DIR)/layer-wise/.
.PHONY: layer-wise
layer-wise: tempo-replay-bin
	@$(TEMPO_REPLAY) -e layer-wise --out $(FIGURES_DIR) $(FIGURE_ARGS)

# Replay across hosts (Documentation/cluster.md, "Replay across hosts"): a multi-turn
# conversation trace on 2 hosts x 2 engines, without and with the cluster pool, under
# both routers. Seconds; results in $(FIGURES_DIR)/cluster-replay/<router>/cluster/.
CLUSTER_REPLAY_DIR ?= $(FIGURES_DIR)/cluster-replay
.PHONY: cluster-replay
cluster-replay: tempo-replay-bin
	@mkdir -p $(CLUSTER_REPLAY_DIR)
	@$(PY) -B scripts/figures/conversation_trace.py $(CLUSTER_REPLAY_DIR)/conversations.jsonl --rate 1.4
	@for r in round-robin prefix-affinity; do \
	  echo "== $$r"; \
	  $(TEMPO_REPLAY) -e cluster -t $(CLUSTER_REPLAY_DIR)/conversations.jsonl --hosts 2 \
	    --engines 2 --router $$r --out $(CLUSTER_REPLAY_DIR)/$$r || exit 1; \
	done
