/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* tempomargin: histograms shared by tempomargin.bpf.c and tempomargin.c. */
#ifndef TEMPO_EBPF_TEMPOMARGIN_H
#define TEMPO_EBPF_TEMPOMARGIN_H

#include "hist.h"

enum tempomargin_hist {
	HIST_EARLY,  /* transfer__begin with margin >= 0: ready before the request */
	HIST_LATE,   /* transfer__begin with margin < 0: the request waited -margin */
	HIST_STAGE,  /* stage__complete latency (libtempo) */
	HIST_KSTAGE, /* tempo:tempo_stage_complete latency (tempo.ko STAGE batches) */
	HIST_KFAULT, /* tempo:tempo_fault latency of faults that read the backing device */
	HIST_NR,
};

#endif
