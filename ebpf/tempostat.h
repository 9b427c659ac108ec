/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* tempostat: counters shared by tempostat.bpf.c and tempostat.c. */
#ifndef TEMPO_EBPF_TEMPOSTAT_H
#define TEMPO_EBPF_TEMPOSTAT_H

/*
 * Cumulative since attach; the loader prints differences per interval, so no event is lost
 * between a read and a reset.
 */
struct tempostat_counts {
	/* libtempo USDT probes */
	__u64 reports;
	__u64 report_bytes;
	__u64 revisions;
	__u64 commits;
	__u64 commit_bytes; /* new_reserved_bytes added to the ledger */
	__u64 defers;
	__u64 defer_bytes; /* needed_bytes of the deferred commits */
	__u64 stage_submits;
	__u64 stage_submit_bytes;
	__u64 stage_completes;
	__u64 staged_bytes; /* completed with status 0 */
	__u64 stage_errors;
	__u64 readies;
	__u64 ready_bytes;
	__u64 transfers;
	__u64 transfer_bytes;
	__u64 transfer_ends;
	__u64 releases;
	__u64 freed_bytes;
	__u64 cancels;
	__u64 ordinary;
	__u64 ordinary_bytes;
	__u64 evictions;
	__u64 evicted_bytes;
};

/* tempo.ko's tracepoints (tempo:*), system-wide */
struct tempostat_kcounts {
	__u64 stage_submits; /* STAGE batches */
	__u64 stage_submit_bytes;
	__u64 stage_completes;
	__u64 staged_bytes; /* completed with status 0 */
	__u64 stage_errors;
	__u64 pins;
	__u64 unpins;
	__u64 evictions;
	__u64 evicted_bytes;
	__u64 faults;
	__u64 fault_bytes; /* read from the backing device by faults */
};

/* The protected-capacity ledger as the probes tell it. */
struct tempostat_ledger {
	__u64 bytes;  /* protected + reserved bytes now */
	__u64 synced; /* 1 once a release or deferral reported the ledger's absolute value */
};

#endif
