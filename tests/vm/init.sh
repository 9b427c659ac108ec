#!/bin/busybox sh
# Guest /init for `make vm-test`: loads tempo.ko in each configuration, runs the suites,
# prints "tempo-vm: N passed, N failed" and powers off. Every check prints one line,
# "PASS name" or "FAIL name: why"; this script counts them.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tracefs tracefs /sys/kernel/tracing
mount -t tmpfs tmpfs /tmp
RESULTS=/tmp/results
: >"$RESULTS"
KO=/lib/tempo/tempo.ko
DISK=/dev/vda

# result NAME STATUS [WHY]: record one check.
result() {
	if [ "$2" -eq 0 ]; then echo "PASS $1"; else echo "FAIL $1: ${3:-exit $2}"; fi | tee -a "$RESULTS"
}
# suite CMD...: run a program whose PASS/FAIL lines are counted.
suite() {
	"$@" 2>&1 | tee -a "$RESULTS"
}
# No kernel warning, BUG, oops or lockdep report since boot.
dmesg_clean() {
	! dmesg | grep -E 'WARNING:|BUG:|Oops|general protection|possible circular|tempo: .*leak'
}
# gtest BINARY: run a GoogleTest program (if shipped), one line per test, plus its exit.
gtest() {
	[ -x "/bin/$1" ] || return 0
	TEMPO_KMOD_DISK=$DISK "/bin/$1" >/tmp/gtest.log 2>&1
	rc=$?
	sed -n -e 's/^\[       OK \] \([^ ,]*\).* ms)$/PASS \1/p' \
		-e 's/^\[  FAILED  \] \([^ ,]*\).* ms)$/FAIL \1: see the log above/p' \
		-e 's/^\[  SKIPPED \] \([^ ,]*\).* ms)$/SKIP \1/p' /tmp/gtest.log | tee -a "$RESULTS"
	[ $rc -eq 0 ] || grep -E 'Failure|Expected|Which is|actual|error' /tmp/gtest.log | sed 's/^/# /' | head -40
	result "gtest.$1" $rc
}
load() {
	insmod "$KO" "$@" 2>&1 && [ -c /dev/tempo0 ]
}

modprobe virtio_pci
modprobe virtio_blk
for i in 1 2 3 4 5 6 7 8 9 10; do [ -b "$DISK" ] && break; sleep 0.2; done
dmesg -n 1

# 1. Kernel-page fast tier: 4 MiB in 64 KiB extents, 2 MiB pin limit, 64 MiB disk.
load backing=$DISK fast_mb=4 extent_kb=64 pin_limit_mb=2
result kmod.load_pages $?
if [ -c /dev/tempo0 ]; then
	suite tempo-vmtest run -p /dev/tempo0 $DISK api badinput data fdclose concurrency trace events
	# libtempo's kmod device, and its controller and provider on it.
	gtest test_kmod_device
	gtest test_kmod_runtime
	grep -q . /sys/kernel/tracing/events/tempo/enable
	result kmod.tracefs_events $?
	rmmod tempo
	result kmod.unload_after_heavy_use $?
fi

# 2. Bad module parameters are refused with a clear errno and leave nothing behind.
insmod "$KO" 2>/dev/null
[ $? -ne 0 ] && [ ! -e /dev/tempo0 ]
result kmod.load_requires_backing $?
insmod "$KO" backing=$DISK extent_kb=3 2>/dev/null
[ $? -ne 0 ] && [ ! -e /dev/tempo0 ]
result kmod.load_rejects_bad_extent $?
insmod "$KO" backing=$DISK extent_kb=8192 2>/dev/null
[ $? -ne 0 ] && [ ! -e /dev/tempo0 ]
result kmod.load_rejects_huge_extent $?
insmod "$KO" backing=/dev/nonexistent 2>/dev/null
[ $? -ne 0 ] && [ ! -e /dev/tempo0 ]
result kmod.load_rejects_missing_disk $?

echo "# pages-tier suites done at $(cut -d' ' -f1 /proc/uptime)s uptime"

# 3. The fast tier on the emulated CXL Type-3 device's /dev/dax0.0.
modprobe -a cxl_acpi cxl_pci cxl_mem cxl_pmem nd_pmem dax_pmem device_dax 2>&1
for i in $(seq 1 50); do [ -e /sys/bus/cxl/devices/mem0 ] && break; sleep 0.2; done
cxl create-region -m -t pmem -d decoder0.0 -w 1 mem0 -s 256M >/tmp/cxl.log 2>&1 &&
	ndctl create-namespace -m devdax -r region0 >>/tmp/cxl.log 2>&1 &&
	[ -c /dev/dax0.0 ]
rc=$?
[ $rc -eq 0 ] || sed 's/^/# /' /tmp/cxl.log
result cxl.devdax_created $rc
if [ $rc -eq 0 ]; then
	DAX=/sys/bus/dax/devices/dax0.0
	start=$(cat $DAX/resource)
	size=$(cat $DAX/size)
	# 16 MiB of it in 2 MiB extents: small enough that the 64 MiB disk overflows it.
	# QEMU's CXL window is not DMA-able by its virtio disk: fill by copy (dax_dma=0).
	[ "$size" -ge $((16 << 20)) ]
	result cxl.dax_size $? "dax0.0 holds only $size bytes"
	load backing=$DISK dax_start="$start" dax_size=$((16 << 20)) dax_dma=0 extent_kb=2048
	result cxl.load_dax $?
	if [ -c /dev/tempo0 ]; then
		suite tempo-vmtest run -p /dev/tempo0 $DISK api data concurrency
		gtest test_kmod_runtime
		rmmod tempo
		result cxl.unload $?
	fi
fi

# 4. The hardware validation script, on the emulated CXL device (bandwidth is reported,
#    not judged: TCG's emulated window is no measure of a real one).
if [ -c /dev/dax0.0 ]; then
	suite tempo-hwcheck --backing $DISK --dax dax0.0 --module "$KO" --dax-bounce \
		--fast-mb 16 --bench-mb 32 --min-ratio 0
fi

echo "# cxl suites done at $(cut -d' ' -f1 /proc/uptime)s uptime"

dmesg_clean
result kernel.log_clean $?
pass=$(grep -c '^PASS' "$RESULTS")
fail=$(grep -c '^FAIL' "$RESULTS")
echo "tempo-vm: $pass passed, $fail failed"
poweroff -f
