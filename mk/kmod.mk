# tempo.ko (make kmod) and its QEMU guest suite (make vm-test). See Documentation/kmod.md.
KMOD_BUILD ?= build-kmod
VM_BUILD   ?= build-vm
# The kernel release of Debian's linux-headers-amd64, read from its dependency so the
# headers and the guest kernel image always match.
KMOD_KVER   = dpkg-query -W -f='$${Depends}' linux-headers-amd64 | sed -n 's/^linux-headers-\([^ ,]*\).*/\1/p'

.PHONY: kmod vm-test

kmod:
	@scripts/deps.sh kmod
	@mkdir -p $(KMOD_BUILD)/include/uapi/linux
	@cp -p kmod/Kbuild kmod/*.c kmod/*.h $(KMOD_BUILD)/
	@cp -p kmod/include/uapi/linux/tempo.h $(KMOD_BUILD)/include/uapi/linux/
	@kver=$$($(KMOD_KVER)); \
	  $(MAKE) --no-print-directory -C /usr/src/linux-headers-$$kver M=$(abspath $(KMOD_BUILD)) modules

# The guest suite: Debian's kernel in QEMU TCG, tempo.ko on a virtio disk and on an
# emulated CXL Type-3 device's /dev/dax0.0; passes on the guest's "0 failed" line.
# The libtempo test programs come from the main build ($(BUILD)), which `make test` builds.
KMOD_GTESTS = test_kmod_device test_kmod_runtime
vm-test: deps kmod
	$(call configure,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo)
	@cmake --build $(BUILD) -j $(JOBS) --target $(KMOD_GTESTS)
	@tests/vm/run.sh $(VM_BUILD) $(KMOD_BUILD)/tempo.ko $(addprefix $(BUILD)/tests/kmod/,$(KMOD_GTESTS))
