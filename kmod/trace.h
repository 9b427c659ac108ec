/* SPDX-License-Identifier: GPL-2.0 */
/* tempo.ko tracepoints: /sys/kernel/tracing/events/tempo/ */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM tempo

#if !defined(TEMPO_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define TEMPO_TRACE_H

#include <linux/tracepoint.h>

/* clang-format off: the event macros keep the kernel's tracepoint layout */

/* A STAGE batch: submitted (status 0, latency 0) and completed. */
DECLARE_EVENT_CLASS(tempo_stage_class,
		    TP_PROTO(u64 ticket, u32 nr_extents, u64 bytes, int status, u64 latency_ns),
		    TP_ARGS(ticket, nr_extents, bytes, status, latency_ns),
		    TP_STRUCT__entry(__field(u64, ticket) __field(u64, bytes)
					     __field(u64, latency_ns) __field(u32, nr_extents)
						     __field(int, status)),
		    TP_fast_assign(__entry->ticket = ticket; __entry->bytes = bytes;
				   __entry->latency_ns = latency_ns;
				   __entry->nr_extents = nr_extents; __entry->status = status;),
		    TP_printk("ticket=%llu extents=%u bytes=%llu status=%d latency_ns=%llu",
			      __entry->ticket, __entry->nr_extents, __entry->bytes, __entry->status,
			      __entry->latency_ns));

DEFINE_EVENT(tempo_stage_class, tempo_stage_submit,
	     TP_PROTO(u64 ticket, u32 nr_extents, u64 bytes, int status, u64 latency_ns),
	     TP_ARGS(ticket, nr_extents, bytes, status, latency_ns));

DEFINE_EVENT(tempo_stage_class, tempo_stage_complete,
	     TP_PROTO(u64 ticket, u32 nr_extents, u64 bytes, int status, u64 latency_ns),
	     TP_ARGS(ticket, nr_extents, bytes, status, latency_ns));

/* One extent: pinned or unpinned (pins = count after), evicted (pins = 0). */
DECLARE_EVENT_CLASS(tempo_extent_class, TP_PROTO(u64 offset, u64 bytes, u32 pins),
		    TP_ARGS(offset, bytes, pins),
		    TP_STRUCT__entry(__field(u64, offset) __field(u64, bytes) __field(u32, pins)),
		    TP_fast_assign(__entry->offset = offset; __entry->bytes = bytes;
				   __entry->pins = pins;),
		    TP_printk("offset=%llu bytes=%llu pins=%u", __entry->offset, __entry->bytes,
			      __entry->pins));

DEFINE_EVENT(tempo_extent_class, tempo_pin, TP_PROTO(u64 offset, u64 bytes, u32 pins),
	     TP_ARGS(offset, bytes, pins));

DEFINE_EVENT(tempo_extent_class, tempo_unpin, TP_PROTO(u64 offset, u64 bytes, u32 pins),
	     TP_ARGS(offset, bytes, pins));

DEFINE_EVENT(tempo_extent_class, tempo_evict, TP_PROTO(u64 offset, u64 bytes, u32 pins),
	     TP_ARGS(offset, bytes, pins));

/* A page fault on the mapping; bytes read from the backing device (0: resident). */
TRACE_EVENT(tempo_fault, TP_PROTO(u64 offset, u64 bytes, u64 latency_ns),
	    TP_ARGS(offset, bytes, latency_ns),
	    TP_STRUCT__entry(__field(u64, offset) __field(u64, bytes) __field(u64, latency_ns)),
	    TP_fast_assign(__entry->offset = offset; __entry->bytes = bytes;
			   __entry->latency_ns = latency_ns;),
	    TP_printk("offset=%llu bytes=%llu latency_ns=%llu", __entry->offset, __entry->bytes,
		      __entry->latency_ns));

/* clang-format on */

#endif /* TEMPO_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>
