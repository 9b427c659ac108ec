# tempod (tools/tempod, tests/tempod).
#   make soak          the kill -9 test for 60 s (make test runs it for 5 s)
#   make bench-tempod  round trip, claim ops/s at 1-8 clients, mapped-extent bandwidth
.PHONY: soak

soak: build
	@cd $(BUILD) && TEMPOD_HAMMER_SECONDS=60 tests/tempod/test_tempod \
	  --gtest_filter='TempodTest.KilledClientsLeaveNothingBehind'

.PHONY: bench-tempod
# tempod's benchmarks beside their limits (Documentation/performance.md, "tempod").
bench-tempod: build
	@$(BUILD)/tests/tempod/tempod_bench
