/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* User-side log2 histogram helpers: interval differences, text and JSON output. */
#ifndef TEMPO_EBPF_HIST_PRINT_H
#define TEMPO_EBPF_HIST_PRINT_H

#include <stdio.h>
#include <linux/types.h>
#include "hist.h"

/* out = cur - prev, field by field (the BPF side only ever adds). */
void hist_diff(struct tempo_hist *out, const struct tempo_hist *cur, const struct tempo_hist *prev);

/* A star graph in the style of biolatency; `unit` names the slot unit ("usecs"). */
void hist_print(FILE *f, const struct tempo_hist *h, const char *unit);

/* {"count":..,"sum_ns":..,"bytes":..,"unit":..,"slots":[{"low":..,"high":..,"count":..}]} */
void hist_print_json(FILE *f, const struct tempo_hist *h, const char *unit);

#endif
