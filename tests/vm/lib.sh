#!/bin/busybox sh
# Shared by the guest inits (init.sh: the suite, `make vm-test`; init-before.sh: one
# numbered item of issue 18 per boot, `make vm-test-before`): setup, the PASS/FAIL
# helpers and the checks both run. Sourced; every check prints "PASS name" or
# "FAIL name: why" (counted from $RESULTS).
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
INJECTED=tempo-vm-injected

# mark WHAT: when a part of the suite ended, in seconds of uptime.
mark() {
	echo "# $1 done at $(cut -d' ' -f1 /proc/uptime)s uptime"
}
# result NAME STATUS [WHY]: record one check.
result() {
	if [ "$2" -eq 0 ]; then echo "PASS $1"; else echo "FAIL $1: ${3:-exit $2}"; fi | tee -a "$RESULTS"
}
# suite CMD...: run a program whose PASS/FAIL lines are counted. Bounded by SUITE_SECONDS:
# the console shows only emergencies (dmesg -n 1), so a program blocked in the kernel used to
# hang the guest silently until the runner's timeout. Now its threads' kernel stacks and the
# kernel's blocked tasks are printed, it is killed, and "<name>.hung" is a FAIL.
SUITE_SECONDS=${SUITE_SECONDS:-300}
suite() {
	sh -c 'echo $$ >/tmp/suite.pid; exec "$@"' suite "$@" 2>&1 | tee -a "$RESULTS" &
	waited=0
	while kill -0 $! 2>/dev/null; do
		if [ $waited -ge "$SUITE_SECONDS" ]; then
			suite_hung "$@"
			break
		fi
		sleep 1
		waited=$((waited + 1))
	done
	wait
}
# suite_hung CMD...: what a suite still running after SUITE_SECONDS was doing, then kill it.
suite_hung() {
	pids="$(cat /tmp/suite.pid) $(pidof tempo-vmtest tempo-hwcheck)"
	echo "# $* still running after ${SUITE_SECONDS}s; its threads in the kernel:"
	for p in $pids; do
		for t in /proc/$p/task/*; do
			[ -r "$t/stack" ] || continue
			echo "# $(cat "$t/comm") $(basename "$t") $(grep State "$t/status") wchan $(cat "$t/wchan")"
			sed 's/^/#   /' "$t/stack"
		done
	done
	echo w >/proc/sysrq-trigger
	echo "# the kernel's blocked tasks (sysrq w):"
	dmesg | tail -n 120 | sed 's/^/# /'
	kill -9 $pids 2>/dev/null
	result "$(basename "$1").hung" 1 "still running after ${SUITE_SECONDS}s (stacks above)"
}
# No kernel warning, BUG, oops, lockdep or hung-task report since boot.
# (The one warning hwcheck_stops_at_kernel_warning injects on purpose is tagged and left out.)
dmesg_clean() {
	! dmesg | grep -v "$INJECTED" |
		grep -E 'WARNING:|BUG:|Oops|general protection|possible circular|blocked for more than|tempo: .*leak'
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

# --- Checks run by both inits (each names the issue-18 item it covers).

# Item 5: a fast tier beyond memory is refused (it once wrapped nr_slots: 1 MiB, silently).
check_fast_tier_beyond_memory() {
	insmod "$KO" backing=$DISK fast_mb=16777217 extent_kb=4 2>/dev/null
	[ $? -ne 0 ] && [ ! -e /dev/tempo0 ] && dmesg | grep -q 'fast_mb=16777217 is more than half of memory'
	result kmod.load_rejects_fast_tier_beyond_memory $? "$(dmesg | grep "tempo: " | tail -1)"
	[ -e /sys/module/tempo ] && rmmod tempo
}
# Item 5: fd_pin_limit_mb: one fd stops at its half, another fd still gets the other half.
check_fd_pin_limit() {
	load backing=$DISK fast_mb=4 extent_kb=64 pin_limit_mb=2 fd_pin_limit_mb=1
	result kmod.load_fd_pin_limit $?
	if [ -c /dev/tempo0 ]; then
		suite tempo-vmtest run /dev/tempo0 $DISK fdlimit
		rmmod tempo
	fi
	mark "fd pin limit"
}
# Hostile backing devices (null_blk through configfs): "slow" completes every read after
# 1 s and fails reads of [4 MiB, 4.25 MiB) (SLOW_BAD_* in vmtest.h; one badblocks range
# holds at most 512 sectors); "huge" is 64 GiB with no memory behind it. Sets SLOW, HUGE.
nullb_setup() {
	modprobe configfs && mount -t configfs none /sys/kernel/config 2>/dev/null
	modprobe null_blk nr_devices=0
	SLOW=$(nullb slow 64 blocksize=4096 memory_backed=1 irqmode=2 completion_nsec=1000000000 badblocks=+8192-8703)
	HUGE=$(nullb huge 65536 blocksize=4096)
	[ -b "$SLOW" ] && [ -b "$HUGE" ]
	result nullb.devices $? "slow '$SLOW' huge '$HUGE'"
	dd if="$SLOW" of=/dev/null bs=4096 count=1 iflag=direct 2>/dev/null &&
		! dd if="$SLOW" of=/dev/null bs=4096 skip=1024 count=1 iflag=direct 2>/dev/null
	result nullb.slow_bad_region $? "badblocks: $(cat /sys/kernel/config/nullb/slow/badblocks)"
	mark "null_blk setup"
}
# Item 6: rmmod while a fill is in flight (1 s) refuses at once instead of blocking until
# it ends.
check_unload_while_filling() {
	load backing="$SLOW" fast_mb=4 extent_kb=64 || return
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
}
# Item 4: unread completions are charged to the caller's memory cgroup (cgroup v2).
check_memcg() {
	mkdir -p /sys/fs/cgroup
	mount -t cgroup2 none /sys/fs/cgroup 2>/dev/null
	echo +memory >/sys/fs/cgroup/cgroup.subtree_control
	result memcg.controller $? "cannot enable the memory controller: $(cat /sys/fs/cgroup/cgroup.controllers)"
	suite tempo-vmtest run /dev/tempo0 $DISK memcg
}
# A pmem region on mem0 and a devdax namespace in it (dax0.0, bound to device_dax); the
# tools' output goes to /tmp/cxl.log.
cxl_region_devdax() {
	cxl create-region -m -t pmem -d decoder0.0 -w 1 mem0 -s 256M >>/tmp/cxl.log 2>&1 &&
		ndctl create-namespace -m devdax -r region0 >>/tmp/cxl.log 2>&1
}
# The emulated CXL Type-3 device as /dev/dax0.0 (devdax mode); status 0 when it exists.
cxl_devdax() {
	modprobe -a cxl_acpi cxl_pci cxl_mem cxl_pmem nd_pmem dax_pmem device_dax 2>&1
	# The memdev's nvdimm (pmem0) must be bound before a pmem region is made: 6.1's
	# cxl_pmem finds none otherwise, and its probe's error path oopses (NULL dereference
	# in release_mappings, seen here once).
	for i in $(seq 1 50); do [ -e /sys/bus/cxl/devices/pmem0/driver ] && break; sleep 0.2; done
	[ -e /sys/bus/cxl/devices/pmem0/driver ] || echo "# cxl: no bound pmem0 after 10 s: $(ls /sys/bus/cxl/devices | tr '\n' ' ')"
	: >/tmp/cxl.log
	cxl_region_devdax && [ -c /dev/dax0.0 ]
	rc=$?
	[ $rc -eq 0 ] || sed 's/^/# /' /tmp/cxl.log
	result cxl.devdax_created $rc
	[ $rc -eq 0 ] || return 1
	size=$(cat /sys/bus/dax/devices/dax0.0/size)
	[ "$size" -ge $((16 << 20)) ]
	result cxl.dax_size $? "dax0.0 holds only $size bytes"
}
# daxhold_start: another program maps 32 MiB of /dev/dax0.0 and writes a pattern (its
# pid in $holder); daxhold_end: 0 when that pattern is intact.
daxhold_start() {
	rm -f /tmp/daxhold.ready
	tempo-vmtest daxhold /dev/dax0.0 $((32 << 20)) /tmp/daxhold.ready &
	holder=$!
	for i in $(seq 1 100); do [ -e /tmp/daxhold.ready ] && break; sleep 0.1; done
}
daxhold_end() {
	kill $holder
	wait $holder
}
# Item 2: tempo.ko never takes a bare address (the kernel ignores unknown parameters: the
# module loads, with a page tier, and claims no range); staging 16 MiB through it leaves
# the data another program keeps in dax0.0 as it wrote it.
check_dax_bare_address() {
	start=$(cat /sys/bus/dax/devices/dax0.0/resource)
	daxhold_start
	insmod "$KO" backing=$DISK dax_start="$start" dax_size=$((16 << 20)) dax_dma=0 \
		extent_kb=2048 2>/dev/null &&
		dmesg | tail -3 | grep -q 'tempo: tempo0 on .*(pages)' && ! grep -q 'tempo$' /proc/iomem
	result cxl.load_ignores_bare_address $? "$(dmesg | grep 'tempo: ' | tail -1)"
	[ -c /dev/tempo0 ] && tempo-vmtest bench /dev/tempo0 $DISK $((16 << 20)) >/dev/null
	[ -e /sys/module/tempo ] && rmmod tempo
	daxhold_end
	result cxl.bare_address_leaves_data_intact $?
}
# Item 2: nor a dax device a driver (and so maybe a program) holds: another program's data
# in dax0.0 stays as it wrote it.
check_dax_bound_refused() {
	daxhold_start
	insmod "$KO" backing=$DISK dax=dax0.0 fast_mb=16 dax_dma=0 extent_kb=2048 2>/dev/null
	[ $? -ne 0 ] && [ ! -e /dev/tempo0 ] && dmesg | grep -q 'tempo: dax0.0 is in use'
	result cxl.load_rejects_bound_dax $?
	[ -e /sys/module/tempo ] && rmmod tempo
	daxhold_end
	result cxl.other_users_data_intact $?
}
# hwcheck_dax BOUND BACKING [ARG...]: tempo-hwcheck on dax0.0 (16 MiB, bounce fills,
# bandwidth not judged) over BACKING, killed after BOUND seconds; its output in
# /tmp/hwcheck.log. Returns its exit status.
hwcheck_dax() {
	hw_bound=$1 hw_backing=$2
	shift 2
	timeout -s KILL $hw_bound tempo-hwcheck --backing "$hw_backing" --dax dax0.0 --module "$KO" \
		--dax-bounce --fast-mb 16 --min-ratio 0 "$@" >/tmp/hwcheck.log 2>&1
}
# hwcheck_done NAME STATUS WHY: the check's result (hwcheck's output shown when it failed),
# then the module unloaded and dax0.0 given back where the run left them.
hwcheck_done() {
	[ $2 -eq 0 ] || sed 's/^/# /' /tmp/hwcheck.log
	result $1 $2 "$3"
	[ -e /sys/module/tempo ] && rmmod tempo
	[ -c /dev/dax0.0 ] || daxctl enable-device dax0.0 >/dev/null 2>&1
}
# Item 8: hwcheck refuses a DAX device another program uses, and leaves its data alone.
check_hwcheck_refuses_dax_in_use() {
	daxhold_start
	hwcheck_dax 300 $DISK
	rc=$?
	daxhold_end
	held=$?
	[ $rc -ne 0 ] && grep -q "^FAIL dax.not_in_use: /dev/dax0.0 is open or mapped by PID $holder" /tmp/hwcheck.log &&
		! grep -q '^PASS kmod.load' /tmp/hwcheck.log && [ $held -eq 0 ] && [ ! -e /sys/module/tempo ]
	rc=$?
	hwcheck_done hwcheck.refuses_dax_in_use $rc \
		"hwcheck exit $rc, holder's data intact: $([ $held -eq 0 ] && echo yes || echo no)"
}
# Item 8: a kernel warning logged during a step fails that step and stops the check (the
# suite step's program logs one, tagged $INJECTED, then runs the badinput group; other
# uses of it are tempo-vmtest's); the module is unloaded and the DAX device given back.
check_hwcheck_stops_at_kernel_warning() {
	cat >/tmp/warning-suite <<-EOF
		#!/bin/sh
		[ "\$1" = run ] || exec tempo-vmtest "\$@"
		echo "<4>WARNING: CPU: 0 PID: \$\$ at $INJECTED (hwcheck test)" >/dev/kmsg
		exec tempo-vmtest run "\$2" "\$3" badinput
	EOF
	chmod +x /tmp/warning-suite
	hwcheck_dax 300 $DISK --bench-mb 4 --suite /tmp/warning-suite
	rc=$?
	why="hwcheck exit $rc, $(grep -c '^FAIL dmesg\.' /tmp/hwcheck.log) dmesg failures"
	[ $rc -ne 0 ] && grep -q '^FAIL dmesg.suite: ' /tmp/hwcheck.log &&
		grep -q "WARNING: CPU: .* at $INJECTED" /tmp/hwcheck.log &&
		! grep -qE '^(PASS|FAIL) (bench|fio|bandwidth)' /tmp/hwcheck.log &&
		grep -q '^PASS kmod.unload' /tmp/hwcheck.log && [ ! -e /sys/module/tempo ] && [ -c /dev/dax0.0 ]
	rc=$?
	hwcheck_done hwcheck.stops_at_kernel_warning $rc "$why"
}
# Item 8: a backing device too slow for the step timeout: each step fails in bounded time
# with its output shown; nothing hangs. (A hwcheck without --step-timeout gets none, and
# the guest's bound of 90 s ends it.)
check_hwcheck_slow_disk() {
	opt=
	tempo-hwcheck --help | grep -q -- --step-timeout && opt="--step-timeout 5"
	t0=$(date +%s)
	hwcheck_dax 90 "$SLOW" --bench-mb 4 $opt
	rc=$?
	t1=$(date +%s)
	[ $rc -ne 0 ] && grep -q '^PASS kmod.load' /tmp/hwcheck.log &&
		grep -q '^FAIL suite.timeout: no end after 5s' /tmp/hwcheck.log && [ $((t1 - t0)) -le 60 ]
	rc=$?
	if [ $rc -ne 0 ]; then
		sed 's/^/# /' /tmp/hwcheck.log
		echo "# (hwcheck exit $rc; nothing after the lines above)"
	fi
	result hwcheck.step_timeouts_on_slow_disk $rc "took $((t1 - t0)) s"
	for i in $(seq 1 60); do rmmod tempo 2>/dev/null; [ -e /sys/module/tempo ] || break; sleep 1; done
	[ -c /dev/dax0.0 ] || daxctl enable-device dax0.0 >/dev/null 2>&1
	[ ! -e /sys/module/tempo ] && [ -c /dev/dax0.0 ]
	result hwcheck.slow_disk_cleanup $?
}
