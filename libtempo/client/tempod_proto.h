/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The tempod protocol: libtempo.so in client mode (device = daemon) <-> tempod.
 *
 * Transport: a Unix SOCK_SEQPACKET socket; one message per packet, at most
 * TEMPOD_MAX_MESSAGE bytes. Every message starts with struct tempod_hdr; every field is
 * fixed width, little-endian (host order: client and daemon share the host), and every
 * reserved field must be zero (else the reply is -EINVAL). A request's reply carries the
 * request's op with TEMPOD_OP_REPLY set and the request's seq; replies to one connection
 * can arrive out of request order (a WAIT_READY answered later than a REPORT sent after it).
 *
 * Extension rules (as tempo.ko's uapi): new operations get new op numbers, never a new
 * layout of an old one; an unknown op is answered -ENOTTY. HELLO negotiates the version
 * and feature bits (TEMPOD_F_*); the daemon answers the features it shares with the client.
 *
 * Descriptors travel with SCM_RIGHTS: the HELLO reply carries the fast tier's memory (a
 * memfd for DRAM, the DAX device), mapped once read-only by the client, so the extents of
 * a transferring claim are read in place (on kmod: a read-only fd of the module's device,
 * opened for that client); a STORE_PUT request carries a memfd holding the
 * object's bytes, sealed against shrinking (F_SEAL_SHRINK: the daemon maps it).
 * Documentation/tempod.md is the reference for every message.
 */
#ifndef TEMPO_TEMPOD_PROTO_H
#define TEMPO_TEMPOD_PROTO_H

#include <linux/types.h>

#include "tempo/tempo.h"

#define TEMPOD_PROTO_VERSION 2 /* 2: QUERY, STATS, CLAIMS carry the 0.3 structs */
#define TEMPOD_MAX_MESSAGE 65536u

/* Feature bits (HELLO). */
#define TEMPOD_F_FAST_TIER_FD (1u << 0) /* the HELLO reply carries the fast tier's fd */
#define TEMPOD_F_STORE_PUT (1u << 1)    /* STORE_PUT with a memfd */
#define TEMPOD_F_TTU_SPREAD                                        \
  (1u << 2) /* granted when the daemon's policy reads TTU spreads: \
             revisions are worth sending as REVISE_SPREAD */
/* kmod: the HELLO reply carries a read-only fd of the module's device, opened for this
 * client (not the daemon's: pins belong to the file that took them), to map whole. */
#define TEMPOD_F_KMOD_FD (1u << 3)
#define TEMPOD_F_ALL \
  (TEMPOD_F_FAST_TIER_FD | TEMPOD_F_STORE_PUT | TEMPOD_F_TTU_SPREAD | TEMPOD_F_KMOD_FD)

#define TEMPOD_OP_REPLY 0x8000u

enum tempod_op {
  TEMPOD_OP_HELLO = 1,             /* tempod_hello -> tempod_hello_reply (+ fd) */
  TEMPOD_OP_REPORT = 2,            /* tempod_report + objects -> tempod_reply_id */
  TEMPOD_OP_REVISE = 3,            /* tempod_claim_arg (arg = ttu_ns) */
  TEMPOD_OP_ORDER = 4,             /* tempod_order + ids */
  TEMPOD_OP_RETRIEVAL = 5,         /* tempod_claim_arg -> tempod_reply_value (outcome) */
  TEMPOD_OP_QUERY = 6,             /* tempod_claim_arg -> struct tempo_claim_info */
  TEMPOD_OP_TRANSFER_BEGIN = 7,    /* tempod_claim_arg */
  TEMPOD_OP_TRANSFER_END = 8,      /* tempod_claim_arg */
  TEMPOD_OP_CANCEL = 9,            /* tempod_claim_arg */
  TEMPOD_OP_WAIT_READY = 10,       /* tempod_claim_arg (arg = timeout_ns) -> tempod_reply_value */
  TEMPOD_OP_EXTENTS = 11,          /* tempod_claim_arg -> tempod_reply_value (count) + extents */
  TEMPOD_OP_ORDINARY_READ = 12,    /* tempod_claim_arg */
  TEMPOD_OP_STATS = 13,            /* header only -> struct tempo_counters */
  TEMPOD_OP_TICK = 14,             /* header only */
  TEMPOD_OP_STORE_PUT = 15,        /* tempod_store_put + memfd */
  TEMPOD_OP_NOW = 16,              /* header only -> tempod_reply_value (ns) */
  TEMPOD_OP_STORE_LOOKUP = 17,     /* tempod_keys + keys -> tempod_reply_value (prefix) */
  TEMPOD_OP_STORE_DELETE = 18,     /* tempod_key */
  TEMPOD_OP_BATCH = 19,            /* tempod_batch + entries -> tempod_reply_value + results */
  TEMPOD_OP_CLAIMS = 20,           /* tempod_claims -> tempod_reply_value + tempod_claim_entry */
  TEMPOD_OP_LABEL = 21,            /* tempod_label: the engine's request id of a claim */
  TEMPOD_OP_STORE_LIST = 22,       /* tempod_store_list -> tempod_reply_value + store objects */
  TEMPOD_OP_STORE_VERIFY = 23,     /* header only -> tempod_store_verified + store objects */
  TEMPOD_OP_STORE_GC = 24,         /* header only -> tempod_store_gc_reply */
  TEMPOD_OP_TIMELINESS = 25,       /* header only -> tempod_timeliness */
  TEMPOD_OP_REVISE_SPREAD = 26,    /* in a BATCH only: REVISE with the TTU's distribution */
  TEMPOD_OP_KMOD_ADD_OBJECTS = 27, /* tempod_kmod_objects + objects: placements on kmod */
};

/* 24 bytes, at the start of every message. */
struct tempod_hdr {
  __u16 op;       /* enum tempod_op, | TEMPOD_OP_REPLY in replies */
  __u16 version;  /* TEMPOD_PROTO_VERSION */
  __u32 len;      /* bytes of the whole message, header included */
  __u64 seq;      /* chosen by the client, echoed in the reply */
  __s32 status;   /* replies: 0 or a negative errno (the C ABI's); requests: 0 */
  __u32 reserved; /* zero */
};

/* HELLO: 56 bytes, once per connection. engine names the engine, NUL-padded: connections
 * that give one name are one engine and share its claims, order and share of the budget;
 * "" makes the connection an engine of its own. */
struct tempod_hello {
  struct tempod_hdr hdr;
  __u32 features; /* TEMPOD_F_* the client understands */
  __u32 reserved;
  char engine[24];
};

/* 64 bytes (+ the fast tier's fd when features has TEMPOD_F_FAST_TIER_FD, or the kmod
 * device's when it has TEMPOD_F_KMOD_FD: then fast_tier_bytes is the device's logical size). */
struct tempod_hello_reply {
  struct tempod_hdr hdr;
  __u32 features;        /* shared features */
  __u32 client_id;       /* this connection's id in the daemon */
  __u64 fast_tier_bytes; /* bytes to map from the fd (0: no fd) */
  __u64 fast_tier_align; /* map at a multiple of this (the DAX device's alignment) */
  char device[16];       /* the daemon's device: "uring" or "kmod", NUL-padded */
};

/* REPORT: 40 bytes + count struct tempo_object. */
struct tempod_report {
  struct tempod_hdr hdr;
  __s64 ttu_ns;
  __u32 count;
  __u32 reserved;
};

/* One claim and one argument (REVISE ttu_ns, WAIT_READY timeout_ns; else zero). 40 bytes. */
struct tempod_claim_arg {
  struct tempod_hdr hdr;
  __u64 id;
  __s64 arg;
};

/* ORDER: 32 bytes + count __u64 claim ids (TEMPO_NO_CLAIM allowed). */
struct tempod_order {
  struct tempod_hdr hdr;
  __u32 count;
  __u32 reserved;
};

/* STORE_PUT: 40 bytes, the object's bytes in the memfd that travels with it. */
struct tempod_store_put {
  struct tempod_hdr hdr;
  __u64 key;
  __u64 bytes;
};

/* STORE_LOOKUP: 32 bytes + count __u64 keys; the reply's value is the prefix held. */
struct tempod_keys {
  struct tempod_hdr hdr;
  __u32 count;
  __u32 reserved;
};

/* STORE_DELETE: 40 bytes. */
struct tempod_key {
  struct tempod_hdr hdr;
  __u64 key;
  __u64 reserved;
};

/* BATCH: 32 bytes + count entries, each a tempod_batch_entry followed (REPORT) by its
 * objects. Entries run in order; the reply is a tempod_reply_value (value = count) and
 * count tempod_batch_result. A malformed entry fails the whole message, none run. */
struct tempod_batch {
  struct tempod_hdr hdr;
  __u32 count;
  __u32 reserved;
};

/* 24 bytes. op: REPORT (arg = ttu_ns, count objects follow, id 0), REVISE (arg = ttu_ns),
 * REVISE_SPREAD (arg = ttu_ns, a tempod_ttu_spread follows), CANCEL, RETRIEVAL,
 * TRANSFER_BEGIN, TRANSFER_END (count 0, and arg 0 but for REVISE and REVISE_SPREAD). */
struct tempod_batch_entry {
  __u16 op;
  __u16 reserved;
  __u32 count;
  __u64 id;
  __s64 arg;
};

/* A REVISE_SPREAD entry's TTU distribution: the TTU by which retrieval begins with
 * probability 0.05, 0.25, 0.5, 0.75 and 0.95 (Documentation/risk-policy.md), in ns,
 * non-decreasing (-EINVAL otherwise). 40 bytes. */
struct tempod_ttu_spread {
  __s64 at[5];
};

/* 16 bytes: the entry's status as its single op would answer it; value: REPORT's claim id,
 * RETRIEVAL's outcome, else 0. */
struct tempod_batch_result {
  __s32 status;
  __u32 reserved;
  __s64 value;
};

/* CLAIMS: 40 bytes; up to max (1..TEMPOD_MAX_CLAIMS) claims with ids above `after`. */
struct tempod_claims {
  struct tempod_hdr hdr;
  __u64 after;
  __u32 max;
  __u32 reserved;
};

/* One claim of a CLAIMS reply: 184 bytes. engine: the owning engine's name, NUL-padded;
 * request: the engine's request id given with LABEL ("" when none), NUL-padded. */
struct tempod_claim_entry {
  __u64 id;
  struct tempo_claim_info info;
  char engine[24];
  __u32 client; /* the connection that reported it */
  __u32 reserved;
  char request[40];
};

/* LABEL: 72 bytes: the engine's request id of claim `id` (NUL-terminated, at most 39 bytes),
 * for operators (CLAIMS, tempoctl claims). */
struct tempod_label {
  struct tempod_hdr hdr;
  __u64 id;
  char request[40];
};

/* STORE_LIST: 40 bytes; up to max (1..TEMPOD_MAX_STORE_OBJECTS) objects with keys above
 * `after` (all keys: after = 0 and the first key 0 is listed too when first = 1), in key
 * order; quarantined = 1 lists the quarantined objects instead. */
struct tempod_store_list {
  struct tempod_hdr hdr;
  __u64 after;
  __u32 max;
  __u16 first;       /* 1: `after` itself is included (the first page) */
  __u16 quarantined; /* 1: the quarantined objects */
};

/* One object of STORE_LIST or STORE_VERIFY: 128 bytes. error: 0, or what reads of it return
 * (-EBADMSG, -EIO) when quarantined or found bad, with the reason (NUL-terminated). */
struct tempod_store_object {
  __u64 key;
  __u64 size;
  __u64 offset;
  __u64 checksum;
  __u64 seq;
  __s32 error;
  __u32 reserved;
  char reason[80];
};

/* STORE_VERIFY's reply: 56 bytes + listed x tempod_store_object (the bad ones, as many as
 * one message holds: bad counts them all). Every object is read and its checksum checked;
 * a bad one is quarantined, as any read does. */
struct tempod_store_verified {
  struct tempod_hdr hdr;
  __u64 verified;
  __u64 verified_bytes;
  __u32 bad;
  __u32 listed;
  __u64 catalog_errors; /* problems the store's catalog replay found at open */
};

/* STORE_GC's reply: 56 bytes. Quarantined objects are removed, the catalog compacted. */
struct tempod_store_gc_reply {
  struct tempod_hdr hdr;
  __u64 removed;
  __u64 catalog_bytes_before;
  __u64 catalog_bytes_after;
  __u64 objects;
};

/* TIMELINESS's reply: 168 bytes. Retrievals requested of committed claims: on time (stage-
 * ready already) or late (still staging), and the commit margin histogram: TTU - TTR when
 * each claim committed, bucket i counting margins <= TEMPOD_MARGIN_BOUNDS_MS[i] ms (the
 * last bucket: +Inf), not cumulative; margin_sum_ns their sum. */
#define TEMPOD_MARGIN_BUCKETS 14
#define TEMPOD_MARGIN_BOUNDS_MS \
  { -100, -10, -1, 0, 1, 2, 5, 10, 20, 50, 100, 1000, 10000 }
struct tempod_timeliness {
  struct tempod_hdr hdr;
  __u64 on_time;
  __u64 late;
  __u64 margin_count;
  __s64 margin_sum_ns;
  __u64 margin_buckets[TEMPOD_MARGIN_BUCKETS];
};

/* KMOD_ADD_OBJECTS: 32 bytes + count struct tempo_kmod_object (32 bytes each), placed all
 * or none, as tempo_kmod_add_objects(). */
struct tempod_kmod_objects {
  struct tempod_hdr hdr;
  __u32 count;
  __u32 reserved;
};

/* A reply with one value (REPORT's claim id, an outcome, a count, a time). 32 bytes. */
struct tempod_reply_value {
  struct tempod_hdr hdr;
  __s64 value;
};

/* EXTENTS reply: tempod_reply_value (value = count) + count of these, 16 bytes each. */
struct tempod_extent {
  __u64 offset; /* from the start of the fast tier's mapping */
  __u64 bytes;
};

#define TEMPOD_MAX_OBJECTS \
  ((TEMPOD_MAX_MESSAGE - sizeof(struct tempod_report)) / sizeof(struct tempo_object))
#define TEMPOD_MAX_ORDER ((TEMPOD_MAX_MESSAGE - sizeof(struct tempod_order)) / sizeof(__u64))
#define TEMPOD_MAX_KMOD_OBJECTS \
  ((TEMPOD_MAX_MESSAGE - sizeof(struct tempod_kmod_objects)) / sizeof(struct tempo_kmod_object))
#define TEMPOD_MAX_KEYS ((TEMPOD_MAX_MESSAGE - sizeof(struct tempod_keys)) / sizeof(__u64))
#define TEMPOD_MAX_CLAIMS \
  ((TEMPOD_MAX_MESSAGE - sizeof(struct tempod_reply_value)) / sizeof(struct tempod_claim_entry))
#define TEMPOD_MAX_STORE_OBJECTS \
  ((TEMPOD_MAX_MESSAGE - sizeof(struct tempod_store_verified)) / sizeof(struct tempod_store_object))
#define TEMPOD_MAX_EXTENTS \
  ((TEMPOD_MAX_MESSAGE - sizeof(struct tempod_reply_value)) / sizeof(struct tempod_extent))

#ifdef __cplusplus
static_assert(sizeof(struct tempod_hdr) == 24);
static_assert(sizeof(struct tempod_hello) == 56);
static_assert(sizeof(struct tempod_hello_reply) == 64);
static_assert(sizeof(struct tempod_report) == 40);
static_assert(sizeof(struct tempod_claim_arg) == 40);
static_assert(sizeof(struct tempod_order) == 32);
static_assert(sizeof(struct tempod_store_put) == 40);
static_assert(sizeof(struct tempod_reply_value) == 32);
static_assert(sizeof(struct tempod_extent) == 16);
static_assert(sizeof(struct tempod_keys) == 32);
static_assert(sizeof(struct tempod_key) == 40);
static_assert(sizeof(struct tempod_batch) == 32);
static_assert(sizeof(struct tempod_batch_entry) == 24);
static_assert(sizeof(struct tempod_batch_result) == 16);
static_assert(sizeof(struct tempod_ttu_spread) == 40);
static_assert(sizeof(struct tempod_claims) == 40);
static_assert(sizeof(struct tempod_claim_entry) == 184);
static_assert(sizeof(struct tempod_label) == 72);
static_assert(sizeof(struct tempod_store_list) == 40);
static_assert(sizeof(struct tempod_store_object) == 128);
static_assert(sizeof(struct tempod_store_verified) == 56);
static_assert(sizeof(struct tempod_store_gc_reply) == 56);
static_assert(sizeof(struct tempod_timeliness) == 168);
static_assert(sizeof(struct tempod_kmod_objects) == 32);
static_assert(sizeof(struct tempo_kmod_object) == 32);
static_assert(sizeof(struct tempo_object) == 16);
static_assert(sizeof(struct tempo_claim_info) == 104);
static_assert(sizeof(struct tempo_counters) == 208);
#endif

#endif /* TEMPO_TEMPOD_PROTO_H */
