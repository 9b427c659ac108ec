// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tempomargin: log2 histograms of the commit timing margin (retrieval request minus ready
 * time, split early/late) and of staging latency.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "bits.bpf.h"
#include "tempo_tp.bpf.h"
#include "tempomargin.h"

/* Nanoseconds per histogram unit: 1000 (usecs) unless the loader sets 1000000 (msecs). */
const volatile __u64 unit_ns = 1000;

struct tempo_hist hists[HIST_NR] = {};

static __always_inline void add(int which, __u64 ns, __u64 bytes)
{
	if (which < 0 || which >= HIST_NR)
		return;
	hist_add(&hists[which], ns / unit_ns, ns, bytes);
}

SEC("usdt")
int BPF_USDT(transfer_begin, __u64 id, __u64 bytes, __s64 margin_ns)
{
	if (margin_ns >= 0)
		add(HIST_EARLY, margin_ns, bytes);
	else
		add(HIST_LATE, -margin_ns, bytes);
	return 0;
}

SEC("usdt")
int BPF_USDT(stage_complete, __u64 key, __u64 bytes, __s64 latency_ns, __s64 status)
{
	add(HIST_STAGE, latency_ns > 0 ? latency_ns : 0, bytes);
	return 0;
}

SEC("tracepoint/tempo/tempo_stage_complete")
int tp_stage_complete(void *ctx)
{
	add(HIST_KSTAGE, TEMPO_TP_STAGE(ctx, latency_ns), TEMPO_TP_STAGE(ctx, bytes));
	return 0;
}

SEC("tracepoint/tempo/tempo_fault")
int tp_fault(void *ctx)
{
	__u64 bytes = TEMPO_TP_FAULT(ctx, bytes);

	/* A fault on a resident extent reads nothing: only demand reads say how slow SSD is. */
	if (bytes)
		add(HIST_KFAULT, TEMPO_TP_FAULT(ctx, latency_ns), bytes);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
