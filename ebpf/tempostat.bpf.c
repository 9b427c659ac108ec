// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* tempostat: counts libtempo's staging and commit events and follows the capacity ledger. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "tempo_tp.bpf.h"
#include "tempostat.h"

struct tempostat_counts counts = {};
struct tempostat_ledger ledger = {};
struct tempostat_kcounts kcounts = {};

#define ADD(field, v) __sync_fetch_and_add(&counts.field, (v))

/* A release or a deferral states the ledger's absolute value: resynchronise on it. */
static __always_inline void ledger_set(__u64 bytes)
{
	ledger.bytes = bytes;
	ledger.synced = 1;
}

SEC("usdt")
int BPF_USDT(claim_report, __u64 id, __u64 bytes, __u64 n_objects, __s64 ttu_ns)
{
	ADD(reports, 1);
	ADD(report_bytes, bytes);
	return 0;
}

SEC("usdt")
int BPF_USDT(claim_revise, __u64 id, __s64 ttu_ns)
{
	ADD(revisions, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(claim_commit, __u64 id, __u64 new_reserved_bytes, __s64 ttr_ns, __s64 laxity_ns)
{
	ADD(commits, 1);
	ADD(commit_bytes, new_reserved_bytes);
	__sync_fetch_and_add(&ledger.bytes, new_reserved_bytes);
	return 0;
}

SEC("usdt")
int BPF_USDT(claim_defer, __u64 id, __u64 needed_bytes, __u64 ledger_bytes, __u64 budget_bytes)
{
	ADD(defers, 1);
	ADD(defer_bytes, needed_bytes);
	ledger_set(ledger_bytes);
	return 0;
}

SEC("usdt")
int BPF_USDT(stage_submit, __u64 key, __u64 bytes)
{
	ADD(stage_submits, 1);
	ADD(stage_submit_bytes, bytes);
	return 0;
}

SEC("usdt")
int BPF_USDT(stage_complete, __u64 key, __u64 bytes, __s64 latency_ns, __s64 status)
{
	ADD(stage_completes, 1);
	if (status == 0)
		ADD(staged_bytes, bytes);
	else
		ADD(stage_errors, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(claim_ready, __u64 id, __u64 bytes)
{
	ADD(readies, 1);
	ADD(ready_bytes, bytes);
	return 0;
}

SEC("usdt")
int BPF_USDT(transfer_begin, __u64 id, __u64 bytes, __s64 margin_ns)
{
	ADD(transfers, 1);
	ADD(transfer_bytes, bytes);
	return 0;
}

SEC("usdt")
int BPF_USDT(transfer_end, __u64 id, __u64 bytes, __s64 duration_ns)
{
	ADD(transfer_ends, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(claim_release, __u64 id, __u64 freed_bytes, __u64 ledger_bytes)
{
	ADD(releases, 1);
	ADD(freed_bytes, freed_bytes);
	ledger_set(ledger_bytes);
	return 0;
}

SEC("usdt")
int BPF_USDT(claim_cancel, __u64 id, __u64 state)
{
	ADD(cancels, 1);
	return 0;
}

SEC("usdt")
int BPF_USDT(claim_ordinary, __u64 id, __u64 bytes)
{
	ADD(ordinary, 1);
	ADD(ordinary_bytes, bytes);
	return 0;
}

SEC("usdt")
int BPF_USDT(evict, __u64 key, __u64 bytes)
{
	ADD(evictions, 1);
	ADD(evicted_bytes, bytes);
	return 0;
}

#define KADD(field, v) __sync_fetch_and_add(&kcounts.field, (v))

SEC("tracepoint/tempo/tempo_stage_submit")
int tp_stage_submit(void *ctx)
{
	KADD(stage_submits, 1);
	KADD(stage_submit_bytes, TEMPO_TP_STAGE(ctx, bytes));
	return 0;
}

SEC("tracepoint/tempo/tempo_stage_complete")
int tp_stage_complete(void *ctx)
{
	KADD(stage_completes, 1);
	if (TEMPO_TP_STAGE(ctx, status) == 0)
		KADD(staged_bytes, TEMPO_TP_STAGE(ctx, bytes));
	else
		KADD(stage_errors, 1);
	return 0;
}

SEC("tracepoint/tempo/tempo_pin")
int tp_pin(void *ctx)
{
	KADD(pins, 1);
	return 0;
}

SEC("tracepoint/tempo/tempo_unpin")
int tp_unpin(void *ctx)
{
	KADD(unpins, 1);
	return 0;
}

SEC("tracepoint/tempo/tempo_evict")
int tp_evict(void *ctx)
{
	KADD(evictions, 1);
	KADD(evicted_bytes, TEMPO_TP_EXTENT(ctx, bytes));
	return 0;
}

SEC("tracepoint/tempo/tempo_fault")
int tp_fault(void *ctx)
{
	KADD(faults, 1);
	KADD(fault_bytes, TEMPO_TP_FAULT(ctx, bytes));
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
