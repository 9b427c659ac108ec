#!/bin/busybox sh
# Guest /init for `make vm-test`: loads tempo.ko in each configuration, runs the suites,
# prints "tempo-vm: N passed, N failed" and powers off. Every check prints one line,
# "PASS name" or "FAIL name: why"; this script counts them. The checks that
# `make vm-test-before` also runs on the module before issue 18 are in lib.sh.
. /lib/tempo/lib.sh
dmesg -n 1

# 1. Kernel-page fast tier: 4 MiB in 64 KiB extents, 2 MiB pin limit, 64 MiB disk.
load backing=$DISK fast_mb=4 extent_kb=64 pin_limit_mb=2
result kmod.load_pages $?
if [ -c /dev/tempo0 ]; then
	suite tempo-vmtest run -p /dev/tempo0 $DISK api badinput data fdclose concurrency trace events hostile
	check_memcg
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

check_fast_tier_beyond_memory
check_fd_pin_limit

# 3. Hostile backing devices (null_blk through configfs, nullb_setup in lib.sh).
nullb_setup
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
check_unload_while_filling
mark "hostile backing devices"

# Eviction notices to 4,000 subscribers (fanout): a 256 MiB tier of 4 KiB extents on the
# huge disk, evicted whole by one STAGE. The hung-task detector looks every 10 s meanwhile
# (dmesg_clean reports what it finds).
hung_s=$(cat /proc/sys/kernel/hung_task_timeout_secs)
echo 10 >/proc/sys/kernel/hung_task_timeout_secs
load backing="$HUGE" fast_mb=256 extent_kb=4
result kmod.load_fanout $?
if [ -c /dev/tempo0 ]; then
	suite tempo-vmtest run /dev/tempo0 "$HUGE" fanout
	rmmod tempo
fi
echo "$hung_s" >/proc/sys/kernel/hung_task_timeout_secs
mark "fanout"

# 4. The fast tier on the emulated CXL Type-3 device's /dev/dax0.0.
cxl_devdax
rc=$?
if [ $rc -eq 0 ]; then
	check_dax_bare_address
	check_dax_bound_refused
	# Owned: disabled in device_dax, then no driver can take it back until tempo.ko leaves.
	daxctl disable-device dax0.0 >/tmp/cxl.log 2>&1
	result cxl.dax_disabled $?
	# QEMU's CXL window is not DMA-able by its virtio disk: fill by copy (dax_dma=0).
	load backing=$DISK dax=dax0.0 fast_mb=16 dax_dma=0 extent_kb=2048
	result cxl.load_dax $?
	if [ -c /dev/tempo0 ]; then
		grep -q 'tempo$' /proc/iomem
		result cxl.range_claimed $?
		# Bound to tempo.ko's dax driver, and no daxctl command takes it: disable-device and
		# reconfigure-device to system-ram fail (the binding cannot be undone from sysfs),
		# enable-device and reconfigure-device to devdax find it enabled and change nothing.
		[ "$(basename "$(readlink /sys/bus/dax/devices/dax0.0/driver)")" = tempo ]
		result cxl.bound_to_tempo $?
		! daxctl disable-device dax0.0 >/tmp/cxl.log 2>&1 &&
			! daxctl reconfigure-device -m system-ram dax0.0 >>/tmp/cxl.log 2>&1
		rc=$?
		daxctl enable-device dax0.0 >>/tmp/cxl.log 2>&1
		daxctl reconfigure-device -m devdax dax0.0 >>/tmp/cxl.log 2>&1
		[ $rc -eq 0 ] && [ "$(basename "$(readlink /sys/bus/dax/devices/dax0.0/driver)")" = tempo ]
		result cxl.daxctl_cannot_take_it $? "$(cat /tmp/cxl.log)"
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
	check_hwcheck_refuses_dax_in_use
	[ -b "$SLOW" ] && check_hwcheck_slow_disk
	check_hwcheck_stops_at_kernel_warning
fi

mark "cxl suites"

# teardown NAME RESTORE CMD...: tempo.ko on dax0.0 (as in part 4), CMD run under load by
# `tempo-vmtest teardown` (its NAME.no_wrong_bytes and NAME.refused_or_ended); when CMD
# succeeded, tempo.ko said so in the kernel log (NAME.logged). Then rmmod, and RESTORE (a
# command line) brings dax0.0 back in devdax mode (NAME.restored).
teardown() {
	name=$1 restore=$2
	shift 2
	daxctl disable-device dax0.0 >/tmp/cxl.log 2>&1
	n0=$(dmesg | wc -l)
	load backing=$DISK dax=dax0.0 fast_mb=16 dax_dma=0 extent_kb=2048
	result "$name.load" $?
	if [ -c /dev/tempo0 ]; then
		suite tempo-vmtest teardown "$name" /dev/tempo0 $DISK "$@"
		if grep -q "^# $name: .* exit 0;" "$RESULTS"; then
			dmesg | tail -n +$((n0 + 1)) | grep -q 'tempo: dax0.0 is going away.*EIO'
			result "$name.logged" $? "$(dmesg | tail -n +$((n0 + 1)) | grep 'tempo: ')"
		fi
		rmmod tempo
		result "$name.unload" $?
	fi
	eval "$restore" >>/tmp/cxl.log 2>&1
	for i in $(seq 1 50); do [ -e /sys/bus/dax/drivers/device_dax/dax0.0 ] && break; sleep 0.2; done
	[ -e /sys/bus/dax/drivers/device_dax/dax0.0 ]
	rc=$?
	[ $rc -eq 0 ] || { sed 's/^/# /' /tmp/cxl.log; ndctl list -RNi 2>&1 | sed 's/^/# /'; }
	result "$name.restored" $rc
}

# The namespace and the region under a loaded DAX tier torn down, each way, under load
# (tempo-vmtest teardown): each is either refused, or tempo.ko logs it and fails every later
# access; never a wrong byte. Then the chain is rebuilt for the next case. A disabled
# region does not come back whole here (`ndctl enable-region` then fails), so it is
# destroyed and made anew, its namespace labels cleared first (the new region would find
# them and have no room).
if [ -c /dev/dax0.0 ]; then
	new_region='cxl destroy-region -f region0; ndctl disable-dimm all && ndctl zero-labels all &&
		ndctl enable-dimm all && cxl_region_devdax'
	teardown cxl.teardown.disable_namespace 'ndctl enable-namespace all' \
		ndctl disable-namespace all
	teardown cxl.teardown.destroy_namespace 'ndctl create-namespace -m devdax -r region0' \
		ndctl destroy-namespace -f all
	teardown cxl.teardown.disable_region "$new_region" cxl disable-region region0
	teardown cxl.teardown.destroy_region "$new_region" cxl destroy-region -f region0
fi
mark "cxl teardown"

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

# 7. A dax device whose range is System RAM is refused. Unbinding kmem while its memory is
#    online leaves the range as System RAM (Linux cannot hot-remove online memory: "cannot
#    be hotremoved until the next reboot") and the device bound to no driver, so only
#    tempo.ko's own System RAM check stands between it and the kernel's memory.
if [ "${node:-}" ] && [ -e /sys/bus/dax/drivers/kmem/dax0.0 ]; then
	echo dax0.0 >/sys/bus/dax/drivers/kmem/unbind
	# A System RAM line of /proc/iomem inside dax0.0's range.
	start=$(($(cat /sys/bus/dax/devices/dax0.0/resource)))
	end=$((start + $(cat /sys/bus/dax/devices/dax0.0/size) - 1))
	ram=
	while IFS= read -r line; do
		case "$line" in
		*"System RAM"*)
			range=$(echo "${line%% :*}" | tr -d ' ')
			[ $((0x${range%-*})) -le $end ] && [ $((0x${range#*-})) -ge $start ] && ram=$line
			;;
		esac
	done </proc/iomem
	echo "# after unbinding kmem: '$ram' in /proc/iomem"
	[ ! -e /sys/bus/dax/devices/dax0.0/driver ] && [ -n "$ram" ]
	rc=$?
	[ $rc -eq 0 ] || grep -i -e 'system ram' -e dax -e cxl /proc/iomem | sed 's/^/# /'
	result cxl.kmem_unbind_leaves_system_ram $rc
	insmod "$KO" backing=$DISK dax=dax0.0 fast_mb=16 dax_dma=0 extent_kb=2048 >/tmp/insmod.log 2>&1
	rc=$?
	msg=$(cat /tmp/insmod.log)
	[ $rc -ne 0 ] && [ ! -e /dev/tempo0 ] && echo "$msg" | grep -qi -e 'invalid argument' -e 'invalid param' &&
		dmesg | tail -5 | grep -q 'tempo: dax0.0: range .* intersects System RAM: refused'
	result cxl.load_rejects_system_ram $? "insmod exit $rc: $msg; $(dmesg | tail -1)"
	[ -e /sys/module/tempo ] && rmmod tempo
fi

dmesg_clean
result kernel.log_clean $?
pass=$(grep -c '^PASS' "$RESULTS")
fail=$(grep -c '^FAIL' "$RESULTS")
echo "tempo-vm: $pass passed, $fail failed"
poweroff -f
