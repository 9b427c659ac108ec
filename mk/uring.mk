# The uring device, object store and fast tier (issue 4).
.PHONY: deps-uring bench-uring

# Every build links liburing, libxxhash, libnuma and libdaxctl: install them with the rest.
deps: deps-uring
deps-uring:
	@scripts/deps.sh uring

# Staging bandwidth vs fio, CPU per GB, retrieval copy vs memcpy (figures in
# Documentation/uring-device.md). Settings: see the script's header.
bench-uring: build
	@scripts/bench/uring_vs_fio.sh $(BUILD)
