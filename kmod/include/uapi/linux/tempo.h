/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * tempo.ko: a memory-semantic flash device. A logical byte range backed by a
 * block device (the SSD tier) with a small fast tier of kernel pages or a
 * Device-DAX range in front. Residency is managed in fixed-size extents
 * (tempo_info.extent_bytes). See Documentation/uapi.md.
 *
 * Every call validates all of its input before it changes anything: a failed
 * call leaves the device as it was.
 */
#ifndef _UAPI_LINUX_TEMPO_H
#define _UAPI_LINUX_TEMPO_H

#include <linux/types.h>

/* Free in Documentation/userspace-api/ioctl/ioctl-number.rst. */
#define TEMPO_IOC_MAGIC 0xD6

/* Most ranges one STAGE, PIN or UNPIN call takes (more: -E2BIG). */
#define TEMPO_MAX_RANGES 256

/*
 * A byte range of the logical device. offset and length are multiples of the
 * page size, length > 0, offset + length <= tempo_info.size. An operation
 * acts on every extent the range touches.
 */
struct tempo_range {
	__u64 offset;
	__u64 length;
};

/* STAGE: also take one pin (owned by this fd) on every extent of the batch. */
#define TEMPO_STAGE_F_PIN (1U << 0)
#define TEMPO_STAGE_F_ALL (TEMPO_STAGE_F_PIN)

/*
 * TEMPO_IOC_STAGE: make the ranges resident, asynchronously. Fast-tier space
 * is taken at submission (evicting unpinned extents, LRU first); one
 * struct tempo_completion per call is later read() from the same fd.
 */
struct tempo_stage {
	__u64 ranges; /* user pointer to struct tempo_range[nr_ranges] */
	__u32 nr_ranges; /* 1..TEMPO_MAX_RANGES */
	__u32 flags; /* TEMPO_STAGE_F_* */
	__u64 ticket; /* chosen by the caller, echoed in the completion */
	__u64 reserved[2]; /* must be zero */
};

/*
 * Records read() from the fd (poll() says POLLIN when one is queued), in the
 * order the events happened. Every record starts with its length and kind:
 * a reader steps through a buffer by len and skips kinds it does not know,
 * so the record can grow (new fields come out of reserved[]) without
 * breaking old readers. read() returns whole records only; a buffer smaller
 * than tempo_info.record_bytes is -EINVAL.
 */
#define TEMPO_REC_STAGE 1 /* one STAGE call completed */
#define TEMPO_REC_EVICT 2 /* an unpinned extent left the fast tier */
#define TEMPO_REC_RESET 3 /* RESET: every extent without a pin left the fast tier */
#define TEMPO_REC_LOST 4 /* notices were dropped (queue full): re-QUERY residency */

struct tempo_completion {
	__u32 len; /* bytes of this record (sizeof(struct tempo_completion) when written) */
	__u16 kind; /* TEMPO_REC_* */
	__u16 reserved0; /* zero */
	__u64 ticket; /* STAGE: the STAGE call's ticket; 0 otherwise */
	__s32 status; /* STAGE: 0, or a negative errno: then the batch holds no pin */
	__u32 flags; /* STAGE: the STAGE call's flags */
	__u64 offset; /* EVICT: first byte of the evicted extent; 0 otherwise */
	__u64 bytes; /* STAGE: sum of the ranges' lengths; EVICT: extent bytes;
		      * LOST: bytes whose eviction notices were dropped */
	__u64 read_bytes; /* STAGE: bytes this batch read from the backing device */
	__u64 submit_ns; /* STAGE: CLOCK_MONOTONIC at submission */
	__u64 complete_ns; /* CLOCK_MONOTONIC when the event happened */
	__u64 reserved[4]; /* zero */
};

/*
 * TEMPO_IOC_SET_EVENTS: which notices (besides its own STAGE completions) this
 * fd receives. TEMPO_EVENT_EVICT: an EVICT record for every eviction of an
 * unpinned extent (LRU for staging or a fault, RESET gives one RESET record),
 * whoever caused it. Off when the fd is opened.
 */
#define TEMPO_EVENT_EVICT (1U << 0)
#define TEMPO_EVENT_ALL (TEMPO_EVENT_EVICT)

struct tempo_events {
	__u32 mask; /* TEMPO_EVENT_* */
	__u32 reserved0; /* must be zero */
	__u64 reserved[3]; /* must be zero */
};

/* No PIN/UNPIN flags are defined yet. */
#define TEMPO_PIN_F_ALL 0U

/*
 * TEMPO_IOC_PIN / TEMPO_IOC_UNPIN: take or drop one pin on every extent the
 * ranges touch (an extent touched twice in one call counts once). PIN needs
 * every extent resident (-EAGAIN otherwise) and fails with -EDQUOT past the
 * pinned-bytes limit; UNPIN drops only pins this fd holds (-EINVAL otherwise).
 * Pins belong to the fd and are all dropped when it is closed.
 */
struct tempo_pin {
	__u64 ranges; /* user pointer to struct tempo_range[nr_ranges] */
	__u32 nr_ranges; /* 1..TEMPO_MAX_RANGES */
	__u32 flags; /* must be zero */
	__u64 reserved[2]; /* must be zero */
};

/* TEMPO_IOC_QUERY: residency and pin state of one range. */
struct tempo_query {
	__u64 offset; /* in */
	__u64 length; /* in */
	__u64 resident_bytes; /* out: bytes of the range in resident extents */
	__u64 filling_bytes; /* out: bytes in extents being read in */
	__u64 pinned_bytes; /* out: bytes in extents any fd has pinned */
	__u32 min_pins; /* out: smallest pin count (all fds) over the extents */
	__u32 own_min_pins; /* out: smallest pin count of this fd */
	__u64 reserved[2]; /* must be zero */
};

#define TEMPO_FAST_PAGES 0 /* the fast tier is kernel pages */
#define TEMPO_FAST_DAX 1 /* the fast tier is a Device-DAX (e.g. CXL) range */

/* TEMPO_IOC_GET_INFO: the device's geometry. */
struct tempo_info {
	__u64 size; /* logical range in bytes (mmap and range bound) */
	__u64 fast_bytes; /* fast-tier capacity */
	__u64 extent_bytes; /* residency granularity */
	__u64 pin_limit_bytes; /* most bytes pinned at once, all fds */
	__u64 backing_dev; /* dev_t of the backing block device */
	__u32 fast_kind; /* TEMPO_FAST_* */
	__u32 max_ranges; /* TEMPO_MAX_RANGES */
	__u32 record_bytes; /* sizeof(struct tempo_completion) of this module */
	__u32 reserved0;
	__u64 reserved[3];
};

/* TEMPO_IOC_GET_FEATURES: the flags this module accepts, per call. */
struct tempo_features {
	__u64 stage_flags; /* TEMPO_STAGE_F_ALL */
	__u64 pin_flags; /* TEMPO_PIN_F_ALL */
	__u64 event_mask; /* TEMPO_EVENT_ALL */
	__u64 reserved[5];
};

/* TEMPO_IOC_STATS: counters since load (gauges are current values). */
struct tempo_stats {
	__u64 resident_bytes; /* gauge: resident extents */
	__u64 filling_bytes; /* gauge: extents being read in */
	__u64 pinned_bytes; /* gauge: extents with a pin */
	__u64 pins; /* gauge: sum of pin counts */
	__u64 stage_batches;
	__u64 stage_errors; /* batches completed with status < 0 */
	__u64 staged_bytes; /* bytes read from disk for staging (successful reads) */
	__u64 faults;
	__u64 fault_fills; /* faults that had to read the backing device */
	__u64 fault_bytes; /* bytes read from disk for faults */
	__u64 evictions;
	__u64 evicted_bytes;
	__u64 pin_calls;
	__u64 unpin_calls;
	__u64 resets;
	__u64 inflight_batches; /* gauge: submitted, not yet complete */
	__u64 fill_errors; /* extent reads that failed (counted in no *_bytes) */
	__u64 reserved[7];
};

#define TEMPO_IOC_GET_INFO _IOR(TEMPO_IOC_MAGIC, 0x00, struct tempo_info)
#define TEMPO_IOC_GET_FEATURES _IOR(TEMPO_IOC_MAGIC, 0x01, struct tempo_features)
#define TEMPO_IOC_STAGE _IOW(TEMPO_IOC_MAGIC, 0x02, struct tempo_stage)
#define TEMPO_IOC_PIN _IOW(TEMPO_IOC_MAGIC, 0x03, struct tempo_pin)
#define TEMPO_IOC_UNPIN _IOW(TEMPO_IOC_MAGIC, 0x04, struct tempo_pin)
#define TEMPO_IOC_QUERY _IOWR(TEMPO_IOC_MAGIC, 0x05, struct tempo_query)
#define TEMPO_IOC_STATS _IOR(TEMPO_IOC_MAGIC, 0x06, struct tempo_stats)
/* Drop all unpinned residency; the argument must be 0. */
#define TEMPO_IOC_RESET _IO(TEMPO_IOC_MAGIC, 0x07)
#define TEMPO_IOC_SET_EVENTS _IOW(TEMPO_IOC_MAGIC, 0x08, struct tempo_events)

#endif /* _UAPI_LINUX_TEMPO_H */
