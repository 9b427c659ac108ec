/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* BPF-side histogram helpers: branch-free log2 and an atomic histogram update. */
#ifndef TEMPO_EBPF_BITS_BPF_H
#define TEMPO_EBPF_BITS_BPF_H

#include "hist.h"

static __always_inline __u64 log2_u32(__u32 v)
{
	__u32 shift, r;

	r = (v > 0xFFFF) << 4;
	v >>= r;
	shift = (v > 0xFF) << 3;
	v >>= shift;
	r |= shift;
	shift = (v > 0xF) << 2;
	v >>= shift;
	r |= shift;
	shift = (v > 0x3) << 1;
	v >>= shift;
	r |= shift;
	r |= (v >> 1);
	return r;
}

static __always_inline __u64 log2_u64(__u64 v)
{
	__u32 hi = v >> 32;

	if (hi)
		return log2_u32(hi) + 32;
	return log2_u32(v);
}

/* Adds one event: `value` (in the histogram's unit) picks the slot. */
static __always_inline void hist_add(struct tempo_hist *h, __u64 value, __u64 magnitude_ns,
				     __u64 bytes)
{
	__u64 slot = log2_u64(value);

	if (slot >= TEMPO_HIST_SLOTS)
		slot = TEMPO_HIST_SLOTS - 1;
	__sync_fetch_and_add(&h->slots[slot], 1);
	__sync_fetch_and_add(&h->count, 1);
	__sync_fetch_and_add(&h->sum_ns, magnitude_ns);
	__sync_fetch_and_add(&h->bytes, bytes);
}

#endif
