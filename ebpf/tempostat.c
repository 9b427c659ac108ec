// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tempostat: per-interval staging, commit, deferral and ledger counts of processes using
 * libtempo (USDT probes of provider `tempo`).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "tempostat.h"
#include "tempostat.skel.h"
#include "tool.h"

static const char usage[] =
	"Usage: tempostat [-h] [-j] [-v] [-p PID] [-b PATH] [interval [count]]\n"
	"Per-interval staging, commit, deferral and protected-capacity counts of libtempo.\n"
	"\n"
	"  -p PID   trace the libtempo USDT probes of this process\n"
	"  -b PATH  binary or library holding the probes (all processes using it, or PID's)\n"
	"  -j       one JSON object per interval\n"
	"  -v       libbpf debug output\n"
	"  -h       this help\n"
	"  interval seconds between reports (default 1); count: reports, then exit\n"
	"\n"
	"Examples:\n"
	"  tempostat -p 1234          # one line a second for process 1234\n"
	"  tempostat -j -p 1234 5 3   # three JSON reports, five seconds apart\n"
	"  tempostat -b /usr/lib/x86_64-linux-gnu/libtempo.so  # every process using libtempo\n";

#define MAX_LINKS 64

#define FIELD(x)                                                        \
	{                                                               \
		.name = #x, .off = offsetof(struct tempostat_counts, x) \
	}
#define KFIELD(x)                                                        \
	{                                                                \
		.name = #x, .off = offsetof(struct tempostat_kcounts, x) \
	}

/* Name and offset of each counter, in output order. */
static const struct {
	const char *name;
	size_t off;
} fields[] = {
	FIELD(reports),		FIELD(report_bytes),  FIELD(revisions),
	FIELD(commits),		FIELD(commit_bytes),  FIELD(defers),
	FIELD(defer_bytes),	FIELD(stage_submits), FIELD(stage_submit_bytes),
	FIELD(stage_completes), FIELD(staged_bytes),  FIELD(stage_errors),
	FIELD(readies),		FIELD(ready_bytes),   FIELD(transfers),
	FIELD(transfer_bytes),	FIELD(transfer_ends), FIELD(releases),
	FIELD(freed_bytes),	FIELD(cancels),	      FIELD(ordinary),
	FIELD(ordinary_bytes),	FIELD(evictions),     FIELD(evicted_bytes),
};

static const struct {
	const char *name;
	size_t off;
} kfields[] = {
	KFIELD(stage_submits), KFIELD(stage_submit_bytes), KFIELD(stage_completes),
	KFIELD(staged_bytes),  KFIELD(stage_errors),	   KFIELD(pins),
	KFIELD(unpins),	       KFIELD(evictions),	   KFIELD(evicted_bytes),
	KFIELD(faults),	       KFIELD(fault_bytes),
};

#define NFIELDS (sizeof(fields) / sizeof(fields[0]))
#define NKFIELDS (sizeof(kfields) / sizeof(kfields[0]))

/* The BPF side only adds: an interval is the difference of two snapshots. */
static void diff(void *out, const void *cur, const void *prev, size_t n_u64)
{
	const __u64 *c = cur, *p = prev;
	__u64 *o = out;

	for (size_t i = 0; i < n_u64; i++)
		o[i] = c[i] - p[i];
}

static __u64 field(const struct tempostat_counts *c, size_t i)
{
	return *(const __u64 *)((const char *)c + fields[i].off);
}

static void print_json(const struct tempostat_counts *d, const struct tempostat_ledger *l,
		       const struct tempostat_kcounts *k, bool kernel, long interval_s)
{
	char ts[16];

	tool_time(ts, sizeof(ts));
	printf("{\"time\":");
	tool_json_string(stdout, ts);
	printf(",\"interval_s\":%ld", interval_s);
	for (size_t i = 0; i < NFIELDS; i++)
		printf(",\"%s\":%llu", fields[i].name, (unsigned long long)field(d, i));
	printf(",\"protected_bytes\":%llu,\"ledger_synced\":%s", (unsigned long long)l->bytes,
	       l->synced ? "true" : "false");
	printf(",\"kernel_traced\":%s,\"kernel\":{", kernel ? "true" : "false");
	for (size_t i = 0; i < NKFIELDS; i++)
		printf("%s\"%s\":%llu", i ? "," : "", kfields[i].name,
		       (unsigned long long)*(const __u64 *)((const char *)k + kfields[i].off));
	printf("}}\n");
}

static void print_header(bool kernel)
{
	printf("%-8s %14s %7s %5s %7s %14s %6s %6s %6s %7s %6s %6s %6s %16s", "TIME", "STAGED_B",
	       "STAGED", "ERR", "COMMITS", "COMMIT_B", "DEFER", "READY", "XFER", "RELEASE",
	       "CANCEL", "ORDIN", "EVICT", "PROTECTED_B");
	if (kernel)
		printf(" %14s %7s %5s %6s %6s", "K_STAGED_B", "K_STAGE", "K_ERR", "K_EVIC",
		       "K_FLT");
	printf("\n");
}

static void print_text(const struct tempostat_counts *d, const struct tempostat_ledger *l,
		       const struct tempostat_kcounts *k, bool kernel)
{
	char ts[16];

	tool_time(ts, sizeof(ts));
	printf("%-8s %14llu %7llu %5llu %7llu %14llu %6llu %6llu %6llu %7llu %6llu %6llu %6llu "
	       "%15llu%s",
	       ts, (unsigned long long)d->staged_bytes, (unsigned long long)d->stage_completes,
	       (unsigned long long)d->stage_errors, (unsigned long long)d->commits,
	       (unsigned long long)d->commit_bytes, (unsigned long long)d->defers,
	       (unsigned long long)d->readies, (unsigned long long)d->transfers,
	       (unsigned long long)d->releases, (unsigned long long)d->cancels,
	       (unsigned long long)d->ordinary, (unsigned long long)d->evictions,
	       (unsigned long long)l->bytes, l->synced ? " " : "?");
	if (kernel)
		printf(" %14llu %7llu %5llu %6llu %6llu", (unsigned long long)k->staged_bytes,
		       (unsigned long long)k->stage_completes, (unsigned long long)k->stage_errors,
		       (unsigned long long)k->evictions, (unsigned long long)k->faults);
	printf("\n");
}

int main(int argc, char **argv)
{
	struct tool_opts o = {.name = "tempostat", .interval_s = 1};
	struct tempostat_counts prev = {}, cur, delta;
	struct tempostat_kcounts kprev = {}, kcur, kdelta;
	bool kernel;
	struct bpf_link *links[MAX_LINKS] = {};
	struct tempostat_bpf *skel = NULL;
	int err;
	long reports = 0;

	err = tool_parse(&o, argc, argv, usage, "");
	if (err)
		return err > 0 ? 0 : 1;
	if (tool_check_env(&o))
		return 1;
	tool_init(&o);

	skel = tempostat_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "tempostat: loading the BPF programs failed: %s\n",
			strerror(errno));
		return 1;
	}
	struct tool_usdt usdt[] = {
		{skel->progs.claim_report, "claim__report"},
		{skel->progs.claim_revise, "claim__revise"},
		{skel->progs.claim_commit, "claim__commit"},
		{skel->progs.claim_defer, "claim__defer"},
		{skel->progs.stage_submit, "stage__submit"},
		{skel->progs.stage_complete, "stage__complete"},
		{skel->progs.claim_ready, "claim__ready"},
		{skel->progs.transfer_begin, "transfer__begin"},
		{skel->progs.transfer_end, "transfer__end"},
		{skel->progs.claim_release, "claim__release"},
		{skel->progs.claim_cancel, "claim__cancel"},
		{skel->progs.claim_ordinary, "claim__ordinary"},
		{skel->progs.evict, "evict"},
	};
	struct tool_tp tps[] = {
		{.prog = skel->progs.tp_stage_submit, .event = "tempo_stage_submit"},
		{.prog = skel->progs.tp_stage_complete, .event = "tempo_stage_complete"},
		{.prog = skel->progs.tp_pin, .event = "tempo_pin"},
		{.prog = skel->progs.tp_unpin, .event = "tempo_unpin"},
		{.prog = skel->progs.tp_evict, .event = "tempo_evict"},
		{.prog = skel->progs.tp_fault, .event = "tempo_fault"},
	};
	err = tool_start(&o, usdt, sizeof(usdt) / sizeof(usdt[0]), tps,
			 sizeof(tps) / sizeof(tps[0]), links, MAX_LINKS, &kernel);
	if (err < 0)
		goto out;
	if (!o.json)
		print_header(kernel);
	for (;;) {
		bool more = tool_wait(&o);
		struct tempostat_ledger ledger = skel->bss->ledger;

		cur = skel->bss->counts;
		kcur = skel->bss->kcounts;
		diff(&delta, &cur, &prev, sizeof(cur) / sizeof(__u64));
		diff(&kdelta, &kcur, &kprev, sizeof(kcur) / sizeof(__u64));
		prev = cur;
		kprev = kcur;
		if (o.json)
			print_json(&delta, &ledger, &kdelta, kernel, o.interval_s);
		else
			print_text(&delta, &ledger, &kdelta, kernel);
		fflush(stdout);
		if (!more || (o.count && ++reports >= o.count))
			break;
	}
	err = 0;
out:
	for (int i = 0; i < MAX_LINKS && links[i]; i++)
		bpf_link__destroy(links[i]);
	tempostat_bpf__destroy(skel);
	return err ? 1 : 0;
}
