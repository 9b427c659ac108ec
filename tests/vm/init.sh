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

# mark WHAT: when a part of the suite ended, in seconds of uptime.
mark() {
	echo "# $1 done at $(cut -d' ' -f1 /proc/uptime)s uptime"
}
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
# checked NAME CMD...: a program whose PASS/FAIL lines are counted, and its exit (a crash
# is a FAIL, with its last output lines; bounded by 120 s).
checked() {
	name=$1
	shift
	timeout -s KILL 120 "$@" >/tmp/checked.log 2>&1
	rc=$?
	grep -E '^(PASS|FAIL|SKIP) ' /tmp/checked.log | tee -a "$RESULTS"
	[ $rc -eq 0 ] || grep -vE '^(PASS|FAIL|SKIP) ' /tmp/checked.log | tail -20 | sed 's/^/# /'
	result "$name.exit" $rc
}
# python_kmod NAME: the Python binding on device=kmod (when the runner shipped Python).
python_kmod() {
	[ -x /bin/python3 ] && [ -f /lib/tempo/kmod_python.py ] || return 0
	checked "$1" env PYTHONPATH=/lib/tempo/python TEMPOKV_LIBRARY=/lib/tempo/libtempo.so.0 \
		python3 /lib/tempo/kmod_python.py "$1" /dev/tempo0 $DISK
}
# gtest BINARY [ARGS...]: run a GoogleTest program (if shipped), one line per test, plus
# its exit.
gtest() {
	[ -x "/bin/$1" ] || return 0
	TEMPO_KMOD_DISK=$DISK "/bin/$@" >/tmp/gtest.log 2>&1
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
# tempod_kmod NAME MODE ARGS...: tempod serving /dev/tempo0 (device = kmod, a 1 MiB budget),
# tempo-capi-vmtest MODE against it through libtempo.so's client mode, then SIGTERM: tempod
# must exit 0 (its log is shown when anything failed).
tempod_kmod() {
	[ -x /bin/tempod ] || return 0
	name=$1
	mode=$2
	shift 2
	sock=/tmp/tempod.sock
	printf '%s\n' 'device = kmod' 'kmod.path = /dev/tempo0' 'fast_tier_bytes = 4MiB' \
		'budget_bytes = 1MiB' 'policy = demand' 'calibration_rate = 100MiB' \
		"daemon.socket = $sock" >/tmp/tempod.conf
	rm -f "$sock"
	tempod --config /tmp/tempod.conf 2>/tmp/tempod.log &
	tpid=$!
	for i in $(seq 1 100); do [ -S "$sock" ] && break; sleep 0.1; done
	checked "$name" tempo-capi-vmtest "$mode" "$name" "$sock" "$@"
	kill -TERM $tpid
	wait $tpid
	result "$name.tempod_exit" $?
	grep -q "^FAIL $name" "$RESULTS" && sed 's/^/# tempod: /' /tmp/tempod.log | tail -20
}

modprobe virtio_pci
modprobe virtio_blk
for i in 1 2 3 4 5 6 7 8 9 10; do [ -b "$DISK" ] && break; sleep 0.2; done
dmesg -n 1

# 1. Kernel-page fast tier: 4 MiB in 64 KiB extents, 2 MiB pin limit, 64 MiB disk.
load backing=$DISK fast_mb=4 extent_kb=64 pin_limit_mb=2
result kmod.load_pages $?
if [ -c /dev/tempo0 ]; then
	suite tempo-vmtest run -p /dev/tempo0 $DISK api badinput data fdclose concurrency trace events hostile
	mark "pages-tier tempo-vmtest"
	# libtempo's kmod device, and its controller and provider on it.
	gtest test_kmod_device
	gtest test_kmod_runtime
	# The typed lifecycle suite's kmod pairs, and the public C ABI (libtempo.so) on
	# device=kmod, read by tempoctl stats through the context's control socket.
	gtest test_lifecycle --gtest_filter='Lifecycle/kmod*'
	mark "pages-tier gtests"
	checked capi.kmod_pages tempo-capi-vmtest kmod capi.kmod_pages /dev/tempo0 $DISK
	mark "pages-tier C ABI"
	# tempod on the module: two engine processes read their claims' bytes in place.
	tempod_kmod tempod.kmod daemon /dev/tempo0 $DISK
	mark "pages-tier tempod"
	python_kmod python.kmod_pages
	mark "pages-tier Python"
	# 20 s of fuzzed ioctls and races; the dmesg check at the end covers it, rmmod below.
	# Bounded: a fuzzer that never ends is a FAIL line, not a guest that hangs the run.
	suite timeout -s KILL 120 env TEMPO_FUZZ_SECONDS=20 tempo-vmtest run /dev/tempo0 $DISK fuzz
	grep -q '^PASS fuzz.ioctl_races' "$RESULTS"
	result fuzz.ended_in_time $?
	mark "fuzz"
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
mark "bad parameters"

insmod "$KO" backing=$DISK fast_mb=16777217 extent_kb=4 2>/dev/null
[ $? -ne 0 ] && [ ! -e /dev/tempo0 ] && dmesg | grep -q 'fast_mb=16777217 is more than half of memory'
result kmod.load_rejects_fast_tier_beyond_memory $?
load backing=$DISK fast_mb=4 extent_kb=64 pin_limit_mb=2 fd_pin_limit_mb=1
result kmod.load_fd_pin_limit $?
if [ -c /dev/tempo0 ]; then
	suite tempo-vmtest run /dev/tempo0 $DISK fdlimit
	rmmod tempo
fi
mark "fd pin limit"

# 3. Hostile backing devices (null_blk through configfs): "slow" completes every read after
#    1 s and fails reads of [4 MiB, 4.25 MiB) (SLOW_BAD_* in vmtest.h; one badblocks range
#    holds at most 512 sectors); "huge" is 64 GiB with no memory behind it.
modprobe configfs && mount -t configfs none /sys/kernel/config 2>/dev/null
modprobe null_blk nr_devices=0
# nullb NAME SIZE_MB ATTR=VALUE...: create a null_blk device, print its /dev path.
nullb() {
	name=$1
	d=/sys/kernel/config/nullb/$name
	mkdir "$d" && echo "$2" >"$d/size" || { echo "# nullb $name: cannot create $d" >&2; return 1; }
	shift 2
	for kv in "$@"; do
		echo "${kv#*=}" >"$d/${kv%%=*}" || { echo "# nullb: $kv refused" >&2; return 1; }
	done
	echo 1 >"$d/power" || { echo "# nullb: power on refused" >&2; return 1; }
	# 6.1 names a configfs device after its directory (older kernels: nullbINDEX)
	for i in $(seq 1 20); do
		for dev in /dev/$name /dev/nullb$(cat "$d/index"); do
			[ -b "$dev" ] && echo "$dev" && return 0
		done
		sleep 0.1
	done
	echo "# nullb $name: no block device appeared" >&2
	return 1
}
SLOW=$(nullb slow 64 blocksize=4096 memory_backed=1 irqmode=2 completion_nsec=1000000000 badblocks=+8192-8703)
HUGE=$(nullb huge 65536 blocksize=4096)
[ -b "$SLOW" ] && [ -b "$HUGE" ]
result nullb.devices $? "slow '$SLOW' huge '$HUGE'"
dd if="$SLOW" of=/dev/null bs=4096 count=1 iflag=direct 2>/dev/null &&
	! dd if="$SLOW" of=/dev/null bs=4096 skip=1024 count=1 iflag=direct 2>/dev/null
result nullb.slow_bad_region $? "badblocks: $(cat /sys/kernel/config/nullb/slow/badblocks)"
mark "null_blk setup"
# on_disk GROUP DISK EXTENT_KB: a 4 MiB page tier on DISK, the tempo-vmtest group, rmmod.
on_disk() {
	load backing="$2" fast_mb=4 extent_kb="$3"
	result "kmod.load_$1" $?
	if [ -c /dev/tempo0 ]; then
		suite tempo-vmtest run /dev/tempo0 "$2" "$1"
		rmmod tempo
	fi
	mark "$1 disk"
}
on_disk slow "$SLOW" 64
# tempod on the slow disk: an engine killed while its claim stages leaves nothing behind.
if [ -x /bin/tempod ] && load backing="$SLOW" fast_mb=4 extent_kb=64 pin_limit_mb=2; then
	tempod_kmod tempod.kmod_kill daemon-kill /dev/tempo0
	for i in $(seq 1 30); do rmmod tempo 2>/dev/null && break; sleep 0.2; done
	[ ! -e /dev/tempo0 ]
	result tempod.kmod_kill.unload $?
	mark "tempod kill on the slow disk"
fi
on_disk huge "$HUGE" 4
# rmmod while a fill is in flight (1 s) refuses at once instead of blocking until it ends.
if load backing="$SLOW" fast_mb=4 extent_kb=64; then
	tempo-vmtest stage-exit /dev/tempo0 0 65536
	rmmod tempo 2>/dev/null
	rc=$?
	# The in-flight fill holds a module reference: still held when rmmod returned means
	# rmmod did not wait for the fill (no wall-clock bound: TCG on a loaded host is slow).
	refs=$(cat /sys/module/tempo/refcnt 2>/dev/null || echo gone)
	[ $rc -ne 0 ] && [ "$refs" != gone ] && [ "$refs" -gt 0 ]
	result kmod.unload_refused_while_filling $? "rmmod exit $rc, module references after it: $refs"
	for i in $(seq 1 30); do rmmod tempo 2>/dev/null && break; sleep 0.2; done
	[ ! -e /dev/tempo0 ]
	result kmod.unload_after_fill $?
fi
mark "hostile backing devices"

# 4. The fast tier on the emulated CXL Type-3 device's /dev/dax0.0.
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
	[ "$size" -ge $((16 << 20)) ]
	result cxl.dax_size $? "dax0.0 holds only $size bytes"
	# tempo.ko never takes a bare address, nor a dax device a driver (and so maybe a
	# program) holds: another program's data in dax0.0 stays as it wrote it.
	# (the kernel ignores unknown parameters: the module loads, with a page tier)
	insmod "$KO" backing=$DISK dax_start="$start" dax_size=$((16 << 20)) 2>/dev/null &&
		dmesg | tail -3 | grep -q 'tempo: tempo0 on .*(pages)' && ! grep -q 'tempo$' /proc/iomem
	result cxl.load_ignores_bare_address $?
	[ -e /sys/module/tempo ] && rmmod tempo
	rm -f /tmp/daxhold.ready
	tempo-vmtest daxhold /dev/dax0.0 $((32 << 20)) /tmp/daxhold.ready &
	holder=$!
	for i in $(seq 1 100); do [ -e /tmp/daxhold.ready ] && break; sleep 0.1; done
	insmod "$KO" backing=$DISK dax=dax0.0 fast_mb=16 dax_dma=0 extent_kb=2048 2>/dev/null
	[ $? -ne 0 ] && [ ! -e /dev/tempo0 ] && dmesg | grep -q 'tempo: dax0.0 is in use'
	result cxl.load_rejects_bound_dax $?
	kill $holder
	wait $holder
	result cxl.other_users_data_intact $?
	# Owned: disabled in device_dax, then no driver can take it back until tempo.ko leaves.
	daxctl disable-device dax0.0 >/tmp/cxl.log 2>&1
	result cxl.dax_disabled $?
	# QEMU's CXL window is not DMA-able by its virtio disk: fill by copy (dax_dma=0).
	load backing=$DISK dax=dax0.0 fast_mb=16 dax_dma=0 extent_kb=2048
	result cxl.load_dax $?
	if [ -c /dev/tempo0 ]; then
		grep -q 'tempo$' /proc/iomem
		result cxl.range_claimed $?
		! daxctl enable-device dax0.0 >/tmp/cxl.log 2>&1
		result cxl.enable_refused_while_owned $?
		suite tempo-vmtest run -p /dev/tempo0 $DISK api data concurrency events
		gtest test_kmod_runtime
		mark "dax-tier tempo-vmtest and gtest"
		checked capi.kmod_dax tempo-capi-vmtest kmod capi.kmod_dax /dev/tempo0 $DISK
		mark "dax-tier C ABI"
		python_kmod python.kmod_dax
		mark "dax-tier Python"
		rmmod tempo
		result cxl.unload $?
	fi
	daxctl enable-device dax0.0 >/tmp/cxl.log 2>&1 && [ -c /dev/dax0.0 ]
	result cxl.dax_returned_after_unload $?
	# The uring device's fast tier on the real /dev/dax0.0 (devdax mode), through the C ABI.
	# 16 MiB of it: every access to the emulated CXL window is slow under TCG.
	[ -c /dev/dax0.0 ] && checked capi.uring_dax tempo-capi-vmtest uring capi.uring_dax /tmp/store-dax \
		uring.fast_tier=dax uring.dax_path=/dev/dax0.0 fast_tier_bytes=16MiB
	mark "uring on dax0.0"
fi

# 5. The hardware validation script, on the emulated CXL device (bandwidth is reported,
#    not judged: TCG's emulated window is no measure of a real one).
if [ -c /dev/dax0.0 ]; then
	suite tempo-hwcheck --backing $DISK --dax dax0.0 --module "$KO" --dax-bounce \
		--fast-mb 16 --bench-mb 32 --min-ratio 0 --step-timeout 120
	# It refuses a DAX device another program uses, and leaves that program's data alone.
	rm -f /tmp/daxhold.ready
	tempo-vmtest daxhold /dev/dax0.0 $((32 << 20)) /tmp/daxhold.ready &
	holder=$!
	for i in $(seq 1 100); do [ -e /tmp/daxhold.ready ] && break; sleep 0.1; done
	tempo-hwcheck --backing $DISK --dax dax0.0 --module "$KO" --dax-bounce --fast-mb 16 \
		--min-ratio 0 >/tmp/hwcheck.log 2>&1
	rc=$?
	kill $holder
	wait $holder
	held=$?
	[ $rc -ne 0 ] && grep -q "^FAIL dax.not_in_use: /dev/dax0.0 is open or mapped by PID $holder" /tmp/hwcheck.log &&
		! grep -q '^PASS kmod.load' /tmp/hwcheck.log && [ $held -eq 0 ] && [ ! -e /sys/module/tempo ]
	rc=$?
	[ $rc -eq 0 ] || sed 's/^/# /' /tmp/hwcheck.log
	result hwcheck.refuses_dax_in_use $rc
	# A backing device too slow for the step timeout: each step fails in bounded time with
	# its output shown; nothing hangs.
	if [ -b "$SLOW" ]; then
		t0=$(date +%s)
		tempo-hwcheck --backing "$SLOW" --dax dax0.0 --module "$KO" --dax-bounce --fast-mb 16 \
			--bench-mb 4 --min-ratio 0 --step-timeout 5 >/tmp/hwcheck.log 2>&1
		rc=$?
		t1=$(date +%s)
		[ $rc -ne 0 ] && grep -q '^PASS kmod.load' /tmp/hwcheck.log &&
			grep -q '^FAIL suite.timeout: no end after 5s' /tmp/hwcheck.log && [ $((t1 - t0)) -le 60 ]
		rc=$?
		[ $rc -eq 0 ] || sed 's/^/# /' /tmp/hwcheck.log
		result hwcheck.step_timeouts_on_slow_disk $rc "took $((t1 - t0)) s"
		for i in $(seq 1 60); do rmmod tempo 2>/dev/null; [ -e /sys/module/tempo ] || break; sleep 1; done
		[ -c /dev/dax0.0 ] || daxctl enable-device dax0.0 >/dev/null 2>&1
		[ ! -e /sys/module/tempo ] && [ -c /dev/dax0.0 ]
		result hwcheck.slow_disk_cleanup $?
	fi
fi

mark "cxl suites"

# 6. The CXL memory as a NUMA node (daxctl system-ram mode, onlined by kmem), and the uring
#    device's DRAM arena bound to that node through libnuma. Last: the memory stays online.
if [ -c /dev/dax0.0 ]; then
	modprobe kmem 2>/tmp/cxl.log
	# ZONE_NORMAL, not movable: io_uring's registered buffers pin the arena long-term, and
	# the kernel migrates long-term pins out of ZONE_MOVABLE, i.e. off this node.
	daxctl reconfigure-device --mode=system-ram --no-movable --force dax0.0 >>/tmp/cxl.log 2>&1
	rc=$?
	node=$(cat /sys/bus/dax/devices/dax0.0/target_node 2>/dev/null)
	free_kb=$(awk '/MemFree/ {print $4}' /sys/devices/system/node/node$node/meminfo 2>/dev/null)
	echo "# dax0.0 as system-ram: node '$node', MemFree ${free_kb:-?} kB"
	[ $rc -eq 0 ] && [ -n "$node" ] && [ "${free_kb:-0}" -gt 0 ]
	rc=$?
	[ $rc -eq 0 ] || sed 's/^/# /' /tmp/cxl.log
	result cxl.numa_node_online $rc "node '$node' MemFree '${free_kb}' kB"
	[ $rc -eq 0 ] && checked capi.uring_numa tempo-capi-vmtest uring capi.uring_numa /tmp/store-numa \
		uring.numa_node=$node fast_tier_bytes=32MiB uring.huge_pages=false
fi
mark "numa"

dmesg_clean
result kernel.log_clean $?
pass=$(grep -c '^PASS' "$RESULTS")
fail=$(grep -c '^FAIL' "$RESULTS")
echo "tempo-vm: $pass passed, $fail failed"
poweroff -f
