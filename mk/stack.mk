# Claim memory under churn (Documentation/performance.md): 10,000,000 report+cancel cycles
# with at most 1,000 live claims through libtempo.so; CLAIM_MEMORY_BEFORE=<dir of an older
# libtempo.so> also runs the same program on that library, side by side, for 2,000,000
# cycles. CSVs and claim_memory.png in $(BUILD)/bench/claims/.
CLAIM_MEMORY_DIR    := $(BUILD)/bench/claims
CLAIM_MEMORY_BEFORE ?=

.PHONY: bench-claim-memory

bench-claim-memory: build
	@scripts/deps.sh plots
	@mkdir -p $(CLAIM_MEMORY_DIR)
	$(BUILD)/tests/bench/claim_memory 10000000 1000 100000 > $(CLAIM_MEMORY_DIR)/claims.csv
	@if [ -n "$(CLAIM_MEMORY_BEFORE)" ]; then \
	  LD_LIBRARY_PATH=$(CLAIM_MEMORY_BEFORE) $(BUILD)/tests/bench/claim_memory 2000000 1000 100000 \
	    > $(CLAIM_MEMORY_DIR)/claims_before.csv; \
	else rm -f $(CLAIM_MEMORY_DIR)/claims_before.csv; fi
	@$(PY) -B scripts/figures/claim_memory.py $(CLAIM_MEMORY_DIR)
