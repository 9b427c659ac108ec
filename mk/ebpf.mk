# eBPF observability (ebpf/): libbpf CO-RE tools tempostat and tempomargin, their host test.
#   make ebpf       build the tools into $(EBPF_OUT) (vmlinux.h generated from the running kernel)
#   make test-ebpf  run tests/ebpf/run.py: probe driver, tempo-replay, uring_replay (root)
#   make test-ebpf-vm  the tools on tempo.ko's tracepoints in a QEMU guest (tests/ebpf/vm_kstage.sh)
#   make bench-ebpf    probe overhead: per hit, and a replay attached vs detached (tests/ebpf/bench.py)
EBPF_OUT    ?= build-ebpf
EBPF_TOOLS  := tempostat tempomargin
EBPF_CLANG  ?= clang
EBPF_CC     ?= cc
EBPF_ARCH   := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
EBPF_MARCH  := $(shell gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
EBPF_BPFFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(EBPF_ARCH) -Wall -Werror \
                 -I$(EBPF_OUT) -Iebpf -I/usr/include/$(EBPF_MARCH)
EBPF_CFLAGS := -O2 -g -std=gnu11 -Wall -Wextra -Werror -Wshadow -I$(EBPF_OUT) -Iebpf -Ilibtempo
EBPF_LIBS   := -lbpf -lelf -lz
EBPF_COMMON := ebpf/tool.c ebpf/hist_print.c
EBPF_HDRS   := $(wildcard ebpf/*.h)

.PHONY: ebpf test-ebpf test-ebpf-vm bench-ebpf ebpf-deps ebpf-replay ebpf-uring-replay
.SECONDARY:

ebpf-deps:
	@scripts/deps.sh ebpf

ebpf: ebpf-deps
	@$(MAKE) --no-print-directory $(addprefix $(EBPF_OUT)/,$(EBPF_TOOLS) probe-driver probe-cost)

$(EBPF_OUT)/vmlinux.h:
	@mkdir -p $(EBPF_OUT)
	bpftool btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(EBPF_OUT)/%.bpf.o: ebpf/%.bpf.c $(EBPF_HDRS) $(EBPF_OUT)/vmlinux.h
	$(EBPF_CLANG) $(EBPF_BPFFLAGS) -c $< -o $@.tmp.o
	bpftool gen object $@ $@.tmp.o && rm -f $@.tmp.o

$(EBPF_OUT)/%.skel.h: $(EBPF_OUT)/%.bpf.o
	bpftool gen skeleton $< name $*_bpf > $@.tmp && mv $@.tmp $@

$(EBPF_OUT)/%: ebpf/%.c $(EBPF_OUT)/%.skel.h $(EBPF_COMMON) $(EBPF_HDRS)
	$(EBPF_CC) $(EBPF_CFLAGS) $< $(EBPF_COMMON) -o $@ $(EBPF_LIBS)

$(EBPF_OUT)/probe-driver: tests/ebpf/probe_driver.c libtempo/core/probes.h
	@mkdir -p $(EBPF_OUT)
	$(EBPF_CC) $(EBPF_CFLAGS) $< -o $@

$(EBPF_OUT)/probe-cost: tests/ebpf/probe_cost.c libtempo/core/probes.h
	@mkdir -p $(EBPF_OUT)
	$(EBPF_CC) $(EBPF_CFLAGS) $< -o $@

# tempo-replay and libtempo.so from the main build tree, for the replay check of test-ebpf.
EBPF_CMAKE  := $(BUILD)
EBPF_REPLAY := $(EBPF_CMAKE)/tools/tempo-replay/tempo-replay

ebpf-replay: deps
	@[ -f $(EBPF_CMAKE)/build.ninja ] || cmake -S . -B $(EBPF_CMAKE) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(EBPF_CMAKE) -j $(JOBS) --target tempo-replay tempo

# tests/ebpf/capi_client.c: a process using libtempo.so (the probes live in the library).
EBPF_LIBTEMPO := $(EBPF_CMAKE)/libtempo/capi/libtempo.so
EBPF_CLIENT   := $(EBPF_OUT)/capi-client
$(EBPF_CLIENT): tests/ebpf/capi_client.c $(EBPF_LIBTEMPO)
	$(EBPF_CC) $(EBPF_CFLAGS) -Ilibtempo/include $< -L$(dir $(EBPF_LIBTEMPO)) -ltempo \
	  -Wl,-rpath,$(abspath $(dir $(EBPF_LIBTEMPO))) -o $@

# tests/ebpf/uring_replay.cc: a real-time replay on the uring device, built by CMake with
# tempo_core (so it links whatever optional libraries the library was built with).
EBPF_URING := $(EBPF_OUT)/uring-replay
ebpf-uring-replay: ebpf-replay
	@cmake --build $(EBPF_CMAKE) -j $(JOBS) --target ebpf-uring-replay
	@mkdir -p $(EBPF_OUT) && cp $(EBPF_CMAKE)/tests/ebpf/ebpf-uring-replay $(EBPF_URING)

# tests/ebpf/gate.c: LD_PRELOAD'ed so a started program waits, mapped, until the tools attached.
EBPF_GATE := $(EBPF_OUT)/libgate.so
$(EBPF_GATE): tests/ebpf/gate.c
	@mkdir -p $(EBPF_OUT)
	$(EBPF_CC) $(EBPF_CFLAGS) -shared -fPIC $< -o $@

test-ebpf: ebpf ebpf-uring-replay
	@$(MAKE) --no-print-directory $(EBPF_CLIENT) $(EBPF_GATE)
	@$(PY) tests/ebpf/run.py $(EBPF_OUT) --replay $(EBPF_REPLAY) \
	  --capi-client $(EBPF_CLIENT) --libtempo $(EBPF_LIBTEMPO) \
	  $$([ -x $(EBPF_URING) ] && echo --uring-replay $(EBPF_URING))
	@BENCH_REPS=1 $(PY) tests/ebpf/bench.py $(EBPF_OUT) \
	  $$([ -x $(EBPF_URING) ] && echo --uring $(EBPF_URING)) $(EBPF_REPLAY) --default-comparison \
	  >$(EBPF_OUT)/bench-smoke.json && echo "ok    make bench-ebpf runs to its end (one repetition each way)"

# tempo.ko is built by `make kmod` into $(KMOD_BUILD); the guest kernel comes with the kmod deps.
test-ebpf-vm: ebpf
	@$(MAKE) --no-print-directory kmod
	@tests/ebpf/vm_kstage.sh $(EBPF_OUT) $(KMOD_BUILD)/tempo.ko

# EBPF_BENCH_REPLAY: tempo-replay and its arguments, to time attached vs detached as well.
EBPF_BENCH_REPLAY ?=
bench-ebpf: ebpf ebpf-uring-replay
	@$(PY) tests/ebpf/bench.py $(EBPF_OUT) \
	  $$([ -x $(EBPF_URING) ] && echo --uring $(EBPF_URING)) $(EBPF_BENCH_REPLAY)
