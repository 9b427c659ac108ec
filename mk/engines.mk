# Engines (Documentation/engines.md): the step-cost learner's convergence with true costs
# +-30% off the model files, the hashing and per-step call costs, and what the vLLM connector
# adds per step on CPU torch. CSVs and step_cost_learning.png in $(BUILD)/bench/engines/.
ENGINES_DIR := $(BUILD)/bench/engines

.PHONY: bench-engines

bench-engines: build
	@scripts/deps.sh plots
	@mkdir -p $(ENGINES_DIR)
	$(BUILD)/tests/engines/step_cost_convergence --prefill 1.3 --decode 0.7 > $(ENGINES_DIR)/slow_prefill.csv
	$(BUILD)/tests/engines/step_cost_convergence --prefill 0.7 --decode 1.3 > $(ENGINES_DIR)/slow_decode.csv
	@$(PY) -B scripts/figures/step_cost_learning.py $(ENGINES_DIR)
	$(BUILD)/tests/engines/engines_bench
	@TEMPOKV_LIBRARY=$(BUILD)/libtempo/capi/libtempo.so PYTHONPATH=libtempo/python \
	  $(PY) -B tests/python/bench_keys.py
	@TEMPOKV_LIBRARY=$(BUILD)/libtempo/capi/libtempo.so TEMPOD_PATH=$(BUILD)/tools/tempod/tempod \
	  PYTHONPATH=libtempo/python:tests/engines \
	  $(PY) -B tests/engines/bench_connector.py --out $(ENGINES_DIR)
