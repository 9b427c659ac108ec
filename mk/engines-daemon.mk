# Four engines as four processes sharing one tempod (Documentation/reproduction.md, "Four
# engine processes sharing one tempod"): the 48-document NarrativeQA run of `--engines 4`,
# each engine a process of its own, against a tempod started per policy on the uring
# device; objects, fast tier and budget at 1/256 of the model's (a 0.8 GiB store under
# $(BUILD), written on the first run and reused). About two minutes of wall clock for the
# three policies on the loaded 2-core machine; results in $(FIGURES_DIR)/engines-daemon/compare/.
ENGINES_DAEMON_DIR ?= $(FIGURES_DIR)/engines-daemon
ENGINES_DAEMON_ARGS ?=

.PHONY: engines-daemon
engines-daemon: tempo-replay-bin
	@cmake --build $(BUILD) -j $(JOBS) --target tempod
	$(TEMPO_REPLAY) --device daemon --engines 4 --documents 48 --interval 125ms \
	  --policy demand,immediate,tempo --byte-scale 256 --store $(BUILD)/engines-daemon-store \
	  --out $(ENGINES_DAEMON_DIR) $(ENGINES_DAEMON_ARGS)
