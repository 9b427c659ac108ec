#!/bin/sh
# Every function of tempo.ko whose name ends in _locked says so to lockdep: its body holds
# a lockdep_assert_held() (so a lockdep kernel catches a caller without the lock). Run by
# `make kmod`; prints each function without one and fails.
# Usage: kmod/check-locked.sh FILE.c...
awk '
	# a definition: a line at column 0 naming NAME_locked(, not a declaration
	/^[a-z].*[a-z0-9_]+_locked\(/ && !/;$/ {
		match($0, /[a-z0-9_]+_locked\(/)
		name = substr($0, RSTART, RLENGTH - 1)
		where = FILENAME ":" FNR
		body = 0
		asserted = 0
		next
	}
	name && /^\{/ { body = 1 }
	body && /lockdep_assert_held\(/ { asserted = 1 }
	body && /^\}/ {
		if (!asserted) {
			print where ": " name "() has no lockdep_assert_held()"
			missing++
		}
		name = ""
		body = 0
	}
	END { exit missing ? 1 : 0 }
' "$@"
