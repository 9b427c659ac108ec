# The cluster tier's suites against a real local Ceph cluster (Documentation/cluster.md):
# one monitor, one manager, three memstore OSDs on loopback, started and torn down here.
CEPH_TEST_DIR ?= /tmp/tempo-ceph-test
CLUSTER_ENV = CEPH_TEST_DIR=$(CEPH_TEST_DIR)

.PHONY: test-cluster

test-cluster:
	@scripts/deps.sh core uring cluster
	$(call configure,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo)
	@cmake --build $(BUILD) -j $(JOBS) --target test_rados_tier test_cluster_capi
	@$(CLUSTER_ENV) scripts/ceph-test-cluster.sh stop
	@$(CLUSTER_ENV) scripts/ceph-test-cluster.sh start
	@cd $(BUILD) && $(CLUSTER_ENV) CEPH_CONF=$(CEPH_TEST_DIR)/ceph.conf TEMPO_CEPH_POOL=tempo \
	  TEMPO_CEPH_SCRIPT=$(abspath scripts/ceph-test-cluster.sh) \
	  ctest --output-on-failure -L cluster; rc=$$?; \
	  cd $(CURDIR) && $(CLUSTER_ENV) scripts/ceph-test-cluster.sh stop; exit $$rc

.PHONY: bench-cluster

# RadosTier reads vs `rados bench seq` on the same local cluster, alternating.
bench-cluster:
	@scripts/deps.sh core uring cluster
	$(call configure,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo)
	@cmake --build $(BUILD) -j $(JOBS) --target bench_rados_tier
	@scripts/bench/cluster_bench.sh $(BUILD) 5
