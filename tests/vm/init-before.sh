#!/bin/busybox sh
# Guest /init for `make vm-test-before`: runs the checks of ONE numbered item of issue 18
# (tempo.item=N on the kernel command line) with the module, uapi and tempo-hwcheck of
# before the issue, and powers off. The checks are lib.sh's, the ones `make vm-test` runs.
# The old module may oops or hang: the item runs in the background, and if it has not
# ended in time (limit, below) the boot reports the hang and ends;
# the kernel's reports are shown either way. Prints
# "tempo-before: item N: P passed, F failed[, hung]" last.
. /lib/tempo/lib.sh

item=$(sed -n 's/.*tempo\.item=\([0-9]*\).*/\1/p' /proc/cmdline)
# Bounds in guest seconds: item 8 runs tempo-hwcheck three times on the emulated CXL
# window; item 1's hang shows within 30 s.
case $item in 1) limit=90 ;; 8) limit=360 ;; *) limit=150 ;; esac

# The pages tier of the suite's first part; TEMPO_VMTEST_ONLY picks the item's tests.
pages_tests() {
	load backing=$DISK fast_mb=4 extent_kb=64 pin_limit_mb=2
	result kmod.load_pages $?
	[ -c /dev/tempo0 ] || return
	suite env TEMPO_VMTEST_ONLY="$1" tempo-vmtest run -p /dev/tempo0 $DISK hostile
	[ "$2" = memcg ] && check_memcg
	rmmod tempo
}
# 1. UNPIN takes a pin an in-flight F_PIN batch holds; the batch's failed fill then drops
#    it again (on an evicted extent: NULL dereference under dev->lock).
item_1() {
	nullb_setup
	export TEMPO_VMTEST_ONLY=slow.unpin_vs_failing_batch
	on_disk slow "$SLOW" 64
}
# 2. The DAX tier from a bare physical address; a dax device others use is taken.
item_2() {
	cxl_devdax || return
	check_dax_bare_address
	check_dax_bound_refused
}
# 3. QUERY walks every extent under dev->lock.
item_3() {
	nullb_setup
	on_disk huge "$HUGE" 4
}
# 4. Unread completions keep their batch, uncharged.
item_4() {
	pages_tests hostile.unread_completion_memory,memcg.unread_records_charged memcg
}
# 5. Pin counts without a per-fd cap, an unchecked fast tier size.
item_5() {
	pages_tests hostile.pin_count_cap
	check_fast_tier_beyond_memory
	check_fd_pin_limit
}
# 6. Fragile paths: exec mappings, shared backing open, records lost on a bad read()
#    buffer, faults holding mmap_lock across reads, rmmod waiting for fills.
item_6() {
	pages_tests hostile.no_exec_mapping,hostile.backing_exclusive,hostile.read_efault_keeps_records
	nullb_setup
	export TEMPO_VMTEST_ONLY=slow.fault_releases_mmap_lock
	on_disk slow "$SLOW" 64
	check_unload_while_filling
}
# 8. tempo-hwcheck: DAX devices in use, kernel warnings, a disk slower than any step.
item_8() {
	cxl_devdax || return
	nullb_setup
	check_hwcheck_refuses_dax_in_use
	check_hwcheck_stops_at_kernel_warning
	check_hwcheck_slow_disk
}

echo "# tempo-before: item $item, at most ${limit}s"
(
	"item_$item"
	dmesg_clean
	result kernel.log_clean $?
	: >/tmp/item.done
) &
t=0
while [ ! -e /tmp/item.done ] && [ $t -lt "$limit" ]; do
	sleep 1
	t=$((t + 1))
done
hung=
if [ ! -e /tmp/item.done ]; then
	hung=", hung"
	echo "# item $item has not ended after ${limit}s; the kernel's reports and blocked tasks:"
	dmesg | grep -v "$INJECTED" | grep -E -A3 'WARNING:|BUG:|Oops|general protection|soft lockup|blocked for more than' |
		head -40 | sed 's/^/# /'
	ps -o pid,stat,args 2>/dev/null | awk '$2 ~ /D/' | sed 's/^/# D: /'
fi
pass=$(grep -c '^PASS' "$RESULTS")
fail=$(grep -c '^FAIL' "$RESULTS")
echo "tempo-before: item $item: $pass passed, $fail failed$hung"
poweroff -f
