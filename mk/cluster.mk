# The cluster tier's suites against a real local Ceph cluster (Documentation/cluster.md):
# one monitor, one manager, three memstore OSDs on loopback, started and torn down here.
CEPH_TEST_DIR ?= /tmp/tempo-ceph-test
CLUSTER_ENV = CEPH_TEST_DIR=$(CEPH_TEST_DIR)

.PHONY: test-cluster

test-cluster:
	@scripts/deps.sh core model uring cluster
	$(call reconfigure,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo)
	@cmake --build $(BUILD) -j $(JOBS) --target test_rados_tier test_cluster_capi tempo tempod
	@$(CLUSTER_ENV) scripts/ceph-test-cluster.sh stop
	@$(CLUSTER_ENV) scripts/ceph-test-cluster.sh start
	@cd $(BUILD) && $(CLUSTER_ENV) CEPH_CONF=$(CEPH_TEST_DIR)/ceph.conf TEMPO_CEPH_POOL=tempo \
	  TEMPO_CEPH_SCRIPT=$(abspath scripts/ceph-test-cluster.sh) \
	  ctest --output-on-failure -L cluster; rc=$$?; \
	  cd $(CURDIR) && $(CLUSTER_ENV) scripts/ceph-test-cluster.sh stop; exit $$rc

.PHONY: bench-cluster

# RadosTier reads vs `rados bench seq` on the same local cluster, alternating.
bench-cluster:
	@scripts/deps.sh core model uring cluster
	$(call reconfigure,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo)
	@cmake --build $(BUILD) -j $(JOBS) --target bench_rados_tier bench_pool_staging
	@scripts/bench/cluster_bench.sh $(BUILD) 5

.PHONY: run-cluster

# The two-hosts demo: a local cluster, two tempods over one pool, engine A saves a prefix on
# host A, engine B stages it on host B from the pool; then everything is stopped and removed.
CEPH_DEMO_DIR ?= /tmp/tempo-ceph-demo
DEMO_ENV = CEPH_TEST_DIR=$(CEPH_DEMO_DIR) CEPH_CONF=$(CEPH_DEMO_DIR)/ceph.conf TEMPO_CEPH_POOL=tempo \
  TEMPOD_PATH=$(abspath $(BUILD))/tools/tempod/tempod \
  TEMPOKV_LIBRARY=$(abspath $(BUILD))/libtempo/capi/libtempo.so PYTHONPATH=$(abspath libtempo/python)

run-cluster:
	@scripts/deps.sh core model uring cluster
	$(call reconfigure,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo)
	@cmake --build $(BUILD) -j $(JOBS) --target tempo tempod
	@$(DEMO_ENV) scripts/ceph-test-cluster.sh stop
	@$(DEMO_ENV) scripts/ceph-test-cluster.sh start
	@$(DEMO_ENV) /usr/bin/python3 tests/cluster/two_hosts.py demo; rc=$$?; \
	  daemons=$$(cat $(CEPH_DEMO_DIR)/run/*.pid); \
	  $(DEMO_ENV) scripts/ceph-test-cluster.sh stop; \
	  for p in $$daemons; do if kill -0 $$p 2>/dev/null; then echo "run-cluster: pid $$p left"; rc=1; fi; done; \
	  if [ -e $(CEPH_DEMO_DIR) ]; then echo "run-cluster: $(CEPH_DEMO_DIR) left"; rc=1; fi; \
	  [ $$rc -ne 0 ] || echo "cluster stopped: its $$(echo $$daemons | wc -w) daemons gone, $(CEPH_DEMO_DIR) removed"; exit $$rc
