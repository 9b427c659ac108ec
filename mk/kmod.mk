# tempo.ko (make kmod) and its QEMU guest suite (make vm-test). See Documentation/kmod.md.
KMOD_BUILD ?= build-kmod
VM_BUILD   ?= build-vm
# The kernel release a linux-headers meta package depends on (Debian's linux-headers-amd64:
# the guest kernel's, so headers and image always match).
kmod_kver = dpkg-query -W -f='$${Depends}' $(1) | sed -n 's/^linux-headers-\([^ ,]*\).*/\1/p'
KMOD_KVER   = $(call kmod_kver,linux-headers-amd64)
# The other kernels the module must build against (compile check only), as
# NAME:PACKAGE[:SUITE] (SUITE: a Debian suite, or ubuntu/SUITE, read through a private apt
# configuration; else the system's sources): headers extracted into $(KMOD_COMPAT_DIR)/NAME,
# never installed (scripts/kernel-headers.sh says why and how). Ubuntu's archive is the one
# that still serves 6.5 and 6.8 headers; together they compile every branch of compat.h.
KMOD_COMPAT = jammy-6.5:linux-headers-6.5.0-45-generic:ubuntu/jammy-updates \
  jammy-hwe:linux-headers-generic-hwe-22.04:ubuntu/jammy-updates \
  bookworm:linux-headers-6.12-amd64 sid:linux-headers-amd64:sid \
  trixie-backports:linux-headers-amd64:trixie-backports
KMOD_COMPAT_DIR = $(KMOD_BUILD)-compat

# kmod_build DIR HEADERS_TREE: copy the sources to DIR and build tempo.ko there.
define kmod_build
	@mkdir -p $(1)/include/uapi/linux
	@cp -p kmod/Kbuild kmod/*.c kmod/*.h $(1)/
	@cp -p kmod/include/uapi/linux/tempo.h $(1)/include/uapi/linux/
	@$(MAKE) --no-print-directory -C $(2) M=$(abspath $(1)) modules
endef

.PHONY: kmod kmod-deps kmod-compat vm-test vm-test-before

kmod-deps:
	@scripts/deps.sh kmod

kmod: kmod-deps kmod-compat
	@kmod/check-locked.sh kmod/*.c
	$(call kmod_build,$(KMOD_BUILD),/usr/src/linux-headers-$$($(KMOD_KVER)))

# Each check is skipped, with the reason, where its headers cannot be had; a compile error
# fails.
kmod-compat: kmod-deps
	@for c in $(KMOD_COMPAT); do \
	  set -- $$(echo $$c | tr : ' '); \
	  if tree=$$(scripts/kernel-headers.sh $$2 $(KMOD_COMPAT_DIR)/$$1 $$3); then \
	    echo "kmod: compile check against $$(basename $$tree)"; \
	    $(MAKE) --no-print-directory kmod-build-one KMOD_ONE_DIR=$(KMOD_COMPAT_DIR)/$$1/module KMOD_ONE_TREE=$$tree || exit 1; \
	  else \
	    echo "kmod: SKIP compile check against $$2$${3:+ from $$3}: its headers cannot be had here (above)"; \
	  fi; \
	done

.PHONY: kmod-build-one
kmod-build-one:
	$(call kmod_build,$(KMOD_ONE_DIR),$(KMOD_ONE_TREE))

# The guest suite: Debian's kernel in QEMU TCG, tempo.ko on a virtio disk and on an
# emulated CXL Type-3 device's /dev/dax0.0; passes on the guest's "0 failed" line.
# The libtempo programs come from the main build ($(BUILD)), which `make test` builds: the
# kmod gtests, the lifecycle suite (its kmod pairs), the C ABI program (with libtempo.so)
# tempoctl and tempod.
KMOD_GUEST_PROGRAMS = tests/kmod/test_kmod_device tests/kmod/test_kmod_runtime \
  tests/stack/test_lifecycle tests/kmod/tempo-capi-vmtest tools/tempoctl/tempoctl \
  tools/tempod/tempod
vm-test: deps kmod
	$(call configure,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo)
	@cmake --build $(BUILD) -j $(JOBS) --target $(notdir $(KMOD_GUEST_PROGRAMS))
	@tests/vm/run.sh $(VM_BUILD) $(KMOD_BUILD)/tempo.ko $(addprefix $(BUILD)/,$(KMOD_GUEST_PROGRAMS))

# The checks of issue 18 on the module before it (the tree at 2e3516b^ from git history;
# tests/vm/before.sh): each numbered item must FAIL there. The old kmod/ is compile-checked
# against the newer headers of KMOD_COMPAT too (item 7; those that can be had), and the
# eBPF test of before beside another process of its binary (item 9). Not in CI: seven
# guest boots, about 8 minutes.
vm-test-before: kmod-deps ebpf
	@trees=; for c in $(KMOD_COMPAT); do \
	  set -- $$(echo $$c | tr : ' '); \
	  tree=$$(scripts/kernel-headers.sh $$2 $(KMOD_COMPAT_DIR)/$$1 $$3 2>/dev/null) && trees="$$trees $$tree"; \
	done; \
	EBPF_OUT=$(EBPF_OUT) tests/vm/before.sh $(VM_BUILD)-before $$trees
