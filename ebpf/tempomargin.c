// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tempomargin: did the KV become ready just before it was needed? Log2 histograms of the
 * commit timing margin (retrieval request time minus ready time; early >= 0, late < 0) and
 * of staging latency, from libtempo's USDT probes.
 */
#include <errno.h>
#include <string.h>
#include <linux/types.h>
#include "hist_print.h"
#include "tempomargin.h"
#include "tempomargin.skel.h"
#include "tool.h"

static const char usage[] =
	"Usage: tempomargin [-h] [-j] [-m] [-v] [-p PID] [-b PATH] [interval [count]]\n"
	"Histograms of the commit timing margin (ready early / late) and of staging latency.\n"
	"\n"
	"  -p PID   trace the libtempo USDT probes of this process\n"
	"  -b PATH  binary or library holding the probes (all processes using it, or PID's)\n"
	"  -m       millisecond histograms (default microseconds)\n"
	"  -j       one JSON object per report\n"
	"  -v       libbpf debug output\n"
	"  -h       this help\n"
	"  interval seconds between reports (default: one report at the end); count: reports\n"
	"\n"
	"Examples:\n"
	"  tempomargin -p 1234        # histograms when Ctrl-C is hit or the process exits\n"
	"  tempomargin -m -p 1234 10  # millisecond histograms every 10 seconds\n"
	"  tempomargin -j -p 1234 1 5 # five JSON reports, one a second\n";

#define MAX_LINKS 16

static const struct {
	const char *key;   /* JSON key */
	const char *title; /* text heading */
} names[HIST_NR] = {
	[HIST_EARLY] = {"margin_early", "commit timing margin, ready early (request - ready >= 0)"},
	[HIST_LATE] = {"margin_late", "commit timing margin, late (the request waited)"},
	[HIST_STAGE] = {"stage_latency", "staging latency (libtempo stage__complete)"},
	[HIST_KSTAGE] = {"kernel_stage_latency",
			 "tempo.ko STAGE batch latency (tempo_stage_complete)"},
	[HIST_KFAULT] = {"kernel_fault_latency", "tempo.ko demand-fault latency (tempo_fault)"},
};

static void report(const struct tool_opts *o, bool kernel, struct tempo_hist *prev,
		   const struct tempo_hist *cur)
{
	const char *unit = o->millis ? "msecs" : "usecs";
	struct tempo_hist d;
	char ts[16];

	tool_time(ts, sizeof(ts));
	if (o->json) {
		printf("{\"time\":");
		tool_json_string(stdout, ts);
		for (int i = 0; i < HIST_NR; i++) {
			hist_diff(&d, &cur[i], &prev[i]);
			printf(",\"%s\":", names[i].key);
			hist_print_json(stdout, &d, unit);
		}
		printf("}\n");
	} else {
		printf("%s\n", ts);
		for (int i = 0; i < (kernel ? HIST_NR : HIST_KSTAGE); i++) {
			hist_diff(&d, &cur[i], &prev[i]);
			printf("%s:\n", names[i].title);
			hist_print(stdout, &d, unit);
		}
		printf("\n");
	}
	memcpy(prev, cur, sizeof(struct tempo_hist) * HIST_NR);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct tool_opts o = {.name = "tempomargin", .interval_s = TOOL_MAX_INTERVAL_S};
	struct bpf_link *links[MAX_LINKS] = {};
	struct tempo_hist prev[HIST_NR] = {};
	struct tempomargin_bpf *skel;
	bool kernel;
	long reports = 0;
	int err;

	err = tool_parse(&o, argc, argv, usage, "m");
	if (err)
		return err > 0 ? 0 : 1;
	if (tool_check_env(&o))
		return 1;
	tool_init(&o);

	skel = tempomargin_bpf__open();
	if (!skel) {
		fprintf(stderr, "tempomargin: opening the BPF object failed: %s\n",
			strerror(errno));
		return 1;
	}
	skel->rodata->unit_ns = o.millis ? 1000000 : 1000;
	err = tempomargin_bpf__load(skel);
	if (err) {
		fprintf(stderr, "tempomargin: loading the BPF programs failed: %s\n",
			strerror(-err));
		goto out;
	}
	struct tool_usdt usdt[] = {
		{skel->progs.transfer_begin, "transfer__begin"},
		{skel->progs.stage_complete, "stage__complete"},
	};
	struct tool_tp tps[] = {
		{.prog = skel->progs.tp_stage_complete, .event = "tempo_stage_complete"},
		{.prog = skel->progs.tp_fault, .event = "tempo_fault"},
	};
	err = tool_start(&o, usdt, sizeof(usdt) / sizeof(usdt[0]), tps,
			 sizeof(tps) / sizeof(tps[0]), links, MAX_LINKS, &kernel);
	if (err < 0)
		goto out;
	for (;;) {
		bool more = tool_wait(&o);

		report(&o, kernel, prev, skel->bss->hists);
		if (!more || (o.count && ++reports >= o.count))
			break;
	}
	err = 0;
out:
	for (int i = 0; i < MAX_LINKS && links[i]; i++)
		bpf_link__destroy(links[i]);
	tempomargin_bpf__destroy(skel);
	return err ? 1 : 0;
}
