/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Log2 histogram shared by the BPF programs and their loaders (fixed-width types only). */
#ifndef TEMPO_EBPF_HIST_H
#define TEMPO_EBPF_HIST_H

/* Slot 0 holds 0 and 1, slot k >= 1 holds [2^k, 2^(k+1) - 1]; 2^48 us is years. */
#define TEMPO_HIST_SLOTS 48

struct tempo_hist {
	__u64 slots[TEMPO_HIST_SLOTS];
	__u64 count;  /* events */
	__u64 sum_ns; /* sum of the magnitudes, in ns, for the mean */
	__u64 bytes;  /* sum of the events' bytes */
};

#endif
