/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The records of tempo.ko's tracepoints (kmod/trace.h, category `tempo`), read with CO-RE.
 *
 * The module's types live in its own BTF, not in vmlinux.h, so they are declared here with
 * preserve_access_index: libbpf relocates each field against the loaded module's BTF. A
 * module built without BTF (out-of-tree builds often are) has no type to relocate against;
 * then bpf_core_type_exists() is false and the layout kmod/trace.h declares is read as is.
 */
#ifndef TEMPO_EBPF_TEMPO_TP_BPF_H
#define TEMPO_EBPF_TEMPO_TP_BPF_H

#include <bpf/bpf_core_read.h>

struct trace_event_raw_tempo_stage_class {
	struct trace_entry ent;
	__u64 ticket;
	__u64 bytes;
	__u64 latency_ns;
	__u32 nr_extents;
	int status;
} __attribute__((preserve_access_index));

struct trace_event_raw_tempo_extent_class {
	struct trace_entry ent;
	__u64 offset;
	__u64 bytes;
	__u32 pins;
} __attribute__((preserve_access_index));

struct trace_event_raw_tempo_fault {
	struct trace_entry ent;
	__u64 offset;
	__u64 bytes;
	__u64 latency_ns;
} __attribute__((preserve_access_index));

/* The same layouts without relocation: trace_entry is 8 bytes, then the TP_STRUCT__entry. */
struct tempo_tp_stage {
	__u64 ent;
	__u64 ticket;
	__u64 bytes;
	__u64 latency_ns;
	__u32 nr_extents;
	int status;
};

struct tempo_tp_extent {
	__u64 ent;
	__u64 offset;
	__u64 bytes;
	__u32 pins;
};

struct tempo_tp_fault {
	__u64 ent;
	__u64 offset;
	__u64 bytes;
	__u64 latency_ns;
};

/* Field `f` of the record at `ctx`: relocated when the module has BTF, else as declared. */
#define TEMPO_TP_FIELD(ctx, raw, plain, f)                                        \
	(bpf_core_type_exists(struct raw) ? BPF_CORE_READ((struct raw *)(ctx), f) \
					  : ((struct plain *)(ctx))->f)

#define TEMPO_TP_STAGE(ctx, f) \
	TEMPO_TP_FIELD(ctx, trace_event_raw_tempo_stage_class, tempo_tp_stage, f)
#define TEMPO_TP_EXTENT(ctx, f) \
	TEMPO_TP_FIELD(ctx, trace_event_raw_tempo_extent_class, tempo_tp_extent, f)
#define TEMPO_TP_FAULT(ctx, f) TEMPO_TP_FIELD(ctx, trace_event_raw_tempo_fault, tempo_tp_fault, f)

#endif
