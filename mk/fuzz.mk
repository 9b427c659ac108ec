# libFuzzer targets (tests/fuzz; Documentation/robustness.md): built with clang in
# $(BUILD_FUZZ) (ASan + UBSan + coverage) and each run for FUZZ_SECONDS from its seed corpus
# in tests/fuzz/corpus/<target>. Inputs it finds go to $(BUILD_FUZZ)/corpus, crashes to
# $(BUILD_FUZZ)/crash-*: never into the tree. Part of `make test`.
BUILD_FUZZ   ?= build-fuzz
FUZZ_SECONDS ?= 30
FUZZ_TARGETS := fuzz_trace fuzz_config fuzz_catalog_record fuzz_control fuzz_tempod fuzz_capi

.PHONY: test-fuzz

test-fuzz: deps
	@scripts/deps.sh fuzz
	@[ -f $(BUILD_FUZZ)/build.ninja ] || CC=clang CXX=clang++ cmake -S . -B $(BUILD_FUZZ) \
	  $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTEMPO_SANITIZE=fuzzer >/dev/null
	@cmake --build $(BUILD_FUZZ) -j $(JOBS) --target fuzz_targets
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(BUILD_FUZZ)/corpus/$$t; \
	  $(BUILD_FUZZ)/tests/fuzz/$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 \
	    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$(BUILD_FUZZ)/ \
	    $(BUILD_FUZZ)/corpus/$$t tests/fuzz/corpus/$$t >$(BUILD_FUZZ)/$$t.log 2>&1 || { \
	    tail -n 40 $(BUILD_FUZZ)/$$t.log; echo "test-fuzz: $$t failed"; exit 1; }; \
	  echo "test-fuzz: $$t: $$(sed -n 's/^stat::number_of_executed_units: *//p' \
	    $(BUILD_FUZZ)/$$t.log) runs in $(FUZZ_SECONDS) s, no crash"; \
	done
