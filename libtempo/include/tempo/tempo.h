/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libtempo: timely staging of reusable LLM KV caches on memory-semantic flash.
 *
 * One flat C ABI over opaque handles. Functions are named tempo_<object>_<verb> and return
 * 0 or a negative errno unless documented otherwise. Every function may be called from any
 * thread on any handle: calls on one context, configuration, writer or runtime side are
 * serialised by that handle's lock. The one exception is a string a call returns into the
 * handle (tempo_config_error): it stays valid only until the next call on that handle, so
 * threads sharing a configuration read its error with tempo_config_get_error, which copies.
 * Times are signed 64-bit nanoseconds.
 *
 * Lifecycle of a claim (see Documentation/c-api.md):
 *   tempo_claim_report        a prefix-cache hit becomes a PLANNED claim (metadata only)
 *   tempo_claim_revise        the runtime's new time-to-use estimate
 *   tempo_ctx_set_order       the runtime's waiting queue, in scheduling order
 *   tempo_claim_request_retrieval   retrieval is due: READY, WAIT, or ORDINARY path
 *   tempo_claim_transfer_begin/end  the fast-tier-to-GPU copy; end releases protection
 *   tempo_claim_cancel        the request went away
 *
 * ABI 0.2 adds the uring device's operations: waiting for readiness, the retrieval extents
 * to copy, the ordinary read, populating the store; and the configuration file. ABI 0.3 adds
 * what engines need: the key scheme, store lookup/delete/async put, the runtime side; and
 * structs that grow: tempo_claim_query and tempo_ctx_stats take the size of the struct they
 * fill (struct tempo_counters was struct tempo_stats), the claim view reports TTR and
 * residency. The sim device's calls are in tempo/tempo_sim.h. ABI 0.4 adds the kmod
 * device's object placement (tempo_kmod_add_objects). ABI 0.5 adds layer-wise claims
 * (tempo_claim_set_layers). ABI 0.6 gives two reserved words of the runtime side a meaning:
 * a running sequence's known output length, and a step call made while a step runs. ABI 0.7
 * makes the ABI uniform (its section at the end): every handle reference-counted, getters
 * named _get_ that return -errno and the value through a pointer, a size or stride on every
 * array and struct that crosses it, a TTU that is not known yet, checked retrieval bytes,
 * every name tempo_<object>_<verb> (tempo_ctx_set_order), enums as fixed-size types
 * (tempo_retrieval_t), per-device sub-objects of a context (store, kmod, sim), and the
 * runtime side's projection of its whole waiting queue.
 */
#ifndef TEMPO_TEMPO_H
#define TEMPO_TEMPO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(TEMPO_BUILDING_LIBRARY)
#define TEMPO_EXPORT __attribute__((visibility("default")))
#else
#define TEMPO_EXPORT
#endif

#define TEMPO_VERSION_MAJOR 0
#define TEMPO_VERSION_MINOR 7

struct tempo_config;
struct tempo_ctx;

typedef uint64_t tempo_claim_id;

/* A placeholder in tempo_ctx_set_order() for a waiting request that has no claim. */
#define TEMPO_NO_CLAIM ((tempo_claim_id)0)

/* One KV object of a manifest: its chunk hash and size in bytes. */
struct tempo_object {
  uint64_t key;
  uint64_t bytes;
};

enum tempo_claim_state {
  TEMPO_CLAIM_PLANNED = 0,
  TEMPO_CLAIM_STAGING = 1,
  TEMPO_CLAIM_STAGE_READY = 2,
  TEMPO_CLAIM_TRANSFERRING = 3,
  TEMPO_CLAIM_RELEASED = 4,
  TEMPO_CLAIM_CANCELLED = 5,
  TEMPO_CLAIM_ORDINARY = 6,
  TEMPO_CLAIM_FAILED = 7,
};

enum tempo_retrieval {
  TEMPO_RETRIEVAL_READY = 0,    /* stage-ready: begin the transfer */
  TEMPO_RETRIEVAL_WAIT = 1,     /* committed and staging: poll until STAGE_READY */
  TEMPO_RETRIEVAL_ORDINARY = 2, /* read through the ordinary (demand) path */
};

/* tempo_claim_info.laxity_ns of a claim that is not PLANNED: it has no laxity. */
#define TEMPO_LAXITY_NONE INT64_MIN
/* tempo_claim_info.ttr_ns of a claim with no time to ready: ended, ORDINARY, or PLANNED under
 * a policy that projects none (demand). */
#define TEMPO_TTR_NONE INT64_MIN

/* tempo_claim_info.flags. CANCEL_PENDING: cancelled while staging or transferring, released
 * once that ends. NEVER_FITS: its bytes exceed the protected budget, so it can never commit
 * (it takes the ordinary path when retrieved), unlike a claim deferred for now (deferrals
 * above 0 without this flag: a later release can let it commit). */
#define TEMPO_CLAIM_F_CANCEL_PENDING (1u << 0)
#define TEMPO_CLAIM_F_NEVER_FITS (1u << 1)

/* Structs the library fills grow at their end, as the kernel's statx and ublk's do: the
 * caller passes sizeof() of the struct it was compiled with, the library writes that many
 * bytes (the fields it knows; fields it does not know yet read 0) and never more. A caller
 * built against an older, smaller struct keeps working on a newer library. */

/* A claim as tempo_claim_query() reports it. Times are on the context's clock, -1 if the
 * event has not happened. */
struct tempo_claim_info {
  uint32_t state;     /* enum tempo_claim_state */
  int32_t error;      /* negative errno when FAILED (or why it failed over), else 0 */
  uint64_t bytes;     /* unique bytes of the manifest */
  int64_t ttu_ns;     /* latest TTU, adjusted for the time since it was given, until it ended */
  int64_t laxity_ns;  /* TTU - TTR while PLANNED, else TEMPO_LAXITY_NONE */
  uint32_t deferrals; /* commit attempts refused for lack of protected capacity */
  uint32_t flags;     /* TEMPO_CLAIM_F_* (named `reserved`, always 0, before 0.3) */
  int64_t reported_ns;
  int64_t committed_ns;
  int64_t ready_ns;
  int64_t retrieval_requested_ns;
  int64_t transfer_begin_ns;
  int64_t ended_ns;
  /* ABI 0.3 (size above TEMPO_CLAIM_INFO_SIZE_0_1): */
  int64_t ttr_ns;          /* time to ready: PLANNED if committed now, STAGING until ready,
                              0 once STAGE_READY or TRANSFERRING, else TEMPO_TTR_NONE */
  uint64_t resident_bytes; /* of `bytes`, in the fast tier now (protected or not); 0 once an
                              ORDINARY claim's read has started */
};
/* Bytes of struct tempo_claim_info in ABI 0.1 and 0.2 (up to ended_ns). */
#define TEMPO_CLAIM_INFO_SIZE_0_1 88

/* Counters of a context (tempo_ctx_stats). Named tempo_stats before 0.3, a name the kernel
 * uapi <linux/tempo.h> also uses for tempo.ko's counters. */
struct tempo_counters {
  int64_t now_ns;
  uint64_t budget_bytes;
  uint64_t ledger_bytes;   /* protected + reserved, shared objects once */
  uint64_t reserved_bytes; /* part of the ledger still staging */
  uint64_t claims_reported;
  uint64_t claims_committed;
  /* Claims a commit was refused for lack of budget. Named capacity_deferrals in 0.3-0.6, a name
   * that counted the refused attempts in 0.1-0.2: renamed in 0.7 so that code written for
   * either meaning stops compiling instead of reading another number. Same offset as 0.3. */
  uint64_t deferred_claims;
  uint64_t capacity_deferral_attempts; /* refused commit attempts (each tick counts again) */
  uint64_t claims_ordinary;
  uint64_t claims_failed_over;
  uint64_t claims_cancelled;
  uint64_t claims_released;
  uint64_t claims_failed;
  uint64_t claims_planned;
  uint64_t claims_live;
  uint64_t stage_ops;
  uint64_t staged_bytes;
  uint64_t stage_errors;
  uint64_t outstanding_ops;
  uint64_t fast_tier_capacity_bytes;
  uint64_t fast_tier_used_bytes;
  uint64_t pinned_bytes;
  uint64_t evictions;
  uint64_t demand_bytes;
  double effective_rate_bps;    /* learned staging rate */
  double protected_gib_seconds; /* integral of the ledger over time */
};

/* The largest size a sized call accepts: beyond it the size is a mistake (-EINVAL). */
#define TEMPO_STRUCT_SIZE_MAX 4096

/* Version of the library actually loaded, "MAJOR.MINOR.PATCH": its MAJOR.MINOR is the newest
 * ABI it provides (the last version node of libtempo.map), "0.7.0" here. Static storage. */
TEMPO_EXPORT const char* tempo_version(void);
/* 0 if the loaded library provides ABI major.minor (same major, minor at least), else
 * -EOPNOTSUPP (spelled -ENOTSUP before 0.7: the same value on Linux). Call it with
 * TEMPO_VERSION_MAJOR/MINOR to detect a mismatched library. */
TEMPO_EXPORT int tempo_version_check(unsigned major, unsigned minor);

/* Configuration: key/value settings (Documentation/configuration.md lists every key).
 * tempo_config_new returns 0 and a new configuration with defaults in *out. */
TEMPO_EXPORT int tempo_config_new(struct tempo_config** out);
/* Frees a configuration (NULL is ignored); contexts made from it keep their own copy. */
TEMPO_EXPORT void tempo_config_free(struct tempo_config* config);
/* Sets one key. -EINVAL on an unknown key or invalid value; tempo_config_error() then says
 * which key and what it accepts. The configuration is unchanged on error. */
TEMPO_EXPORT int tempo_config_set(struct tempo_config* config, const char* key, const char* value);
/* The last error message of this configuration ("" if none). Owned by the configuration and
 * valid until the next call on it: a configuration shared by threads reads its error with
 * tempo_config_get_error. */
TEMPO_EXPORT const char* tempo_config_error(const struct tempo_config* config);

/* Creates a context from a configuration (copied; the caller still owns it). Returns 0 and
 * a context holding one reference in *out, or -EINVAL (see tempo_config_error), -ENOMEM,
 * -EOPNOTSUPP (device not built in); with control_socket set, the socket's errors too
 * (-EADDRINUSE served by another process, -EEXIST not a socket). */
TEMPO_EXPORT int tempo_ctx_new(struct tempo_config* config, struct tempo_ctx** out);
/* Takes one more reference on ctx and returns it (NULL stays NULL). */
TEMPO_EXPORT struct tempo_ctx* tempo_ctx_ref(struct tempo_ctx* ctx);
/* Drops a reference; the last one cancels every live claim and frees the context. */
TEMPO_EXPORT void tempo_ctx_unref(struct tempo_ctx* ctx);

/* A log line of a context: `priority` is a syslog priority (LOG_ERR...), `message` valid
 * only during the call. */
typedef void (*tempo_log_fn)(void* data, int priority, const char* message);
/* Routes the context's log lines (syslog priorities) to fn; NULL silences them. */
TEMPO_EXPORT void tempo_ctx_set_log_fn(struct tempo_ctx* ctx, tempo_log_fn fn, void* data);

/* The context's clock in ns (virtual on sim, monotonic otherwise); -EINVAL for NULL. */
TEMPO_EXPORT int64_t tempo_ctx_now(struct tempo_ctx* ctx);
/* Runs the controller's periodic re-evaluation now. */
TEMPO_EXPORT int tempo_ctx_tick(struct tempo_ctx* ctx);
/* The context's counters into *counters, of `size` bytes: pass sizeof(struct
 * tempo_counters). Writes exactly `size` bytes (fields this library lacks read 0). -EINVAL
 * for NULL, a size of 0 or above TEMPO_STRUCT_SIZE_MAX (nothing written then). */
TEMPO_EXPORT int tempo_ctx_stats(struct tempo_ctx* ctx, struct tempo_counters* counters,
                                 size_t size);

/* tempo_sim_add_objects and tempo_sim_advance, for tests and simulations: <tempo/tempo_sim.h>. */

/* Reports a reusable-KV hit as a PLANNED claim: `objects` is the ordered manifest, ttu_ns
 * the time until retrieval is expected to begin. No I/O, no reservation. Returns 0 and
 * the claim in *id; -EINVAL for an empty manifest, a zero-size object or more than 2^20
 * objects; -EOVERFLOW for more than 2^50 bytes in all or a TTU beyond +-2^62 ns. */
TEMPO_EXPORT int tempo_claim_report(struct tempo_ctx* ctx, const struct tempo_object* objects,
                                    size_t count, int64_t ttu_ns, tempo_claim_id* id);
/* A new TTU estimate; ignored once committed. -ENOENT unknown, -EINVAL ended, -EOVERFLOW
 * beyond +-2^62 ns. */
TEMPO_EXPORT int tempo_claim_revise(struct tempo_ctx* ctx, tempo_claim_id id, int64_t ttu_ns);
/* ABI 0.5. The claim holds every layer group of a request, loaded group by group during its
 * prefill: its objects, in manifest order, form `groups` consecutive groups (object j of n
 * in group j * groups / n), and group g is needed g * per_group_ns after retrieval begins
 * (one group's share of the prefill). Laxity is then taken against the claim's lead TTR, the
 * latest over groups of (group g's projected readiness - g * per_group_ns): the claim
 * commits later when its first groups will be ready by its TTU though its last land during
 * prefill. tempo_claim_query's ttr_ns and laxity_ns of the PLANNED claim are then the lead
 * TTR's; STAGE_READY still means every object. One group undoes it. Ignored (0) once committed;
 * -ENOENT unknown, -EINVAL ended, groups 0 or more than the claim's distinct objects, per_group_ns
 * < 0; -EOVERFLOW groups x per_group_ns beyond 2^62 ns. */
TEMPO_EXPORT int tempo_claim_set_layers(struct tempo_ctx* ctx, tempo_claim_id id, uint32_t groups,
                                        int64_t per_group_ns);
/* The waiting queue in scheduling order (TEMPO_NO_CLAIM for requests without a claim).
 * -ENOENT if an id is unknown (nothing changes). Named tempo_ctx_set_order from 0.7. */
TEMPO_EXPORT int tempo_order_update(struct tempo_ctx* ctx, const tempo_claim_id* ids, size_t count);
/* Retrieval is due: commits now if possible. *outcome is an enum tempo_retrieval (0.7:
 * tempo_claim_retrieve writes it as a fixed-size tempo_retrieval_t).
 * -ENOENT unknown, -EINVAL ended or transferring, or the claim's error if FAILED. */
TEMPO_EXPORT int tempo_claim_request_retrieval(struct tempo_ctx* ctx, tempo_claim_id id,
                                               int* outcome);
/* Readiness, timing, TTR and residency of a claim into *info, of `size` bytes: pass
 * sizeof(struct tempo_claim_info). Writes exactly `size` bytes (fields this library lacks
 * read 0). -ENOENT unknown (an ended claim is forgotten after its retention); -EINVAL for
 * NULL, a size of 0 or above TEMPO_STRUCT_SIZE_MAX (nothing written then). */
TEMPO_EXPORT int tempo_claim_query(struct tempo_ctx* ctx, tempo_claim_id id,
                                   struct tempo_claim_info* info, size_t size);
/* STAGE_READY -> TRANSFERRING. -EAGAIN still staging, -EINVAL otherwise. */
TEMPO_EXPORT int tempo_claim_transfer_begin(struct tempo_ctx* ctx, tempo_claim_id id);
/* TRANSFERRING -> RELEASED: ends the claim's protection. -EINVAL if not transferring
 * (a second call, for instance). */
TEMPO_EXPORT int tempo_claim_transfer_end(struct tempo_ctx* ctx, tempo_claim_id id);
/* Cancels: PLANNED at once; committed claims keep protection until their staging or
 * transfer ends. -EINVAL ended, -EALREADY already cancelled. */
TEMPO_EXPORT int tempo_claim_cancel(struct tempo_ctx* ctx, tempo_claim_id id);

/* ABI 0.2 ------------------------------------------------------------------------------ */

/* One fast-tier extent of a transferring claim: `bytes` bytes at `addr` to copy. */
struct tempo_extent {
  const void* addr;
  uint64_t bytes;
};

/* Loads a configuration file (Documentation/configuration.md): `key = value` lines, `#`
 * comments, a `[uring]` section for uring.* keys. With path NULL, the file named by the
 * TEMPO_CONFIG environment variable if set. Then applies TEMPO_<KEY> environment overrides
 * (TEMPO_POLICY, TEMPO_URING_STORE_PATH...). Precedence, lowest first: defaults, the
 * calibration file, this file, the environment, later tempo_config_set() calls.
 * Returns 0; -ENOENT (file unreadable), -EISDIR (a directory), -EFBIG (over 1 MiB) or
 * -EINVAL, with tempo_config_error() naming the file:line or variable, the key and the
 * accepted values. Unchanged on error. */
TEMPO_EXPORT int tempo_config_load(struct tempo_config* config, const char* path);

/* The context's device: "sim", "uring" or "kmod". Owned by the library. NULL for a NULL context. */
TEMPO_EXPORT const char* tempo_ctx_device(struct tempo_ctx* ctx);

/* Waits up to timeout_ns for the claim to be stage-ready (*outcome TEMPO_RETRIEVAL_READY)
 * or to take the ordinary path (TEMPO_RETRIEVAL_ORDINARY). On sim, waiting runs virtual
 * time forward (at most timeout_ns). Returns 0, -ETIMEDOUT, -ENOENT unknown, -ECANCELED
 * released or cancelled, or the claim's error when FAILED; -EINVAL a negative timeout,
 * -EOVERFLOW when the clock plus timeout_ns passes 2^62 ns (so INT64_MAX is refused, not
 * taken as "at once"). 0.7: tempo_claim_wait writes *outcome as a tempo_retrieval_t. */
TEMPO_EXPORT int tempo_claim_wait_ready(struct tempo_ctx* ctx, tempo_claim_id id,
                                        int64_t timeout_ns, int* outcome);

/* The retrieval extents of a TRANSFERRING claim, manifest order: the fast-tier bytes to
 * copy. Sets *count to the number of extents; writes them when capacity >= *count and
 * returns 0, else returns -ENOSPC (call again with room for *count). They stay valid until
 * tempo_claim_transfer_end(). -EINVAL not transferring, -ENOENT unknown, -EOPNOTSUPP on
 * sim (no bytes). */
TEMPO_EXPORT int tempo_claim_extents(struct tempo_ctx* ctx, tempo_claim_id id,
                                     struct tempo_extent* extents, size_t capacity, size_t* count);

/* The ordinary path of an ORDINARY claim: reads its objects through the device's demand
 * path (they are cached unprotected when space allows) and returns once they are read:
 * 0 or the read's error. -EINVAL not ORDINARY (or read already), -ENOENT unknown. */
TEMPO_EXPORT int tempo_claim_ordinary_read(struct tempo_ctx* ctx, tempo_claim_id id);

/* The uring device only: writes `bytes` bytes at `data` into the object store as `key`
 * (copied). -EEXIST if the store holds the key (objects are read-only once written),
 * -EINVAL empty, -ENOSPC store full, -EOPNOTSUPP on sim. */
TEMPO_EXPORT int tempo_store_put(struct tempo_ctx* ctx, uint64_t key, const void* data,
                                 size_t bytes);

/* ABI 0.3: engines (Documentation/engines.md) ----------------------------------------- */

/* Key scheme. A prompt is cut into chunks of chunk_tokens token ids; chunk i's key hashes its
 * tokens with chunk i-1's key, and chunk 0's parent is the namespace's seed, so a key names
 * the whole prefix up to its chunk and two models, dtypes or tensor-parallel ranks never
 * share one. Layer-group objects take keys derived from the chunk's key. */
struct tempo_key_namespace {
  const char* model;    /* the model's name, non-empty */
  const char* dtype;    /* the KV cache's dtype ("bfloat16"), non-empty */
  uint32_t tp_rank;     /* below tp_size */
  uint32_t tp_size;     /* at least 1 */
  uint64_t reserved[2]; /* zero */
};

/* The seed of a namespace's chains in *seed. -EINVAL for a missing or empty name, a rank
 * out of range or a nonzero reserved field. */
TEMPO_EXPORT int tempo_key_seed(const struct tempo_key_namespace* ns, uint64_t* seed);
/* Keys of the full chunks of tokens[0..count), chunk 0's parent being `parent` (a seed, or
 * the last key of the tokens before, to extend a chain). Sets *written to count /
 * chunk_tokens and writes the keys when capacity allows, else returns -ENOSPC (nothing
 * written). -EINVAL chunk_tokens 0. */
TEMPO_EXPORT int tempo_key_chain(uint64_t parent, const uint32_t* tokens, size_t count,
                                 uint32_t chunk_tokens, uint64_t* keys, size_t capacity,
                                 size_t* written);
/* The key of layer group `group`'s object of the chunk keyed `chain_key`. */
TEMPO_EXPORT uint64_t tempo_key_layer_group(uint64_t chain_key, uint32_t group);

/* Store. tempo_store_put (ABI 0.2) is idempotent from 0.3: the same key with the same bytes
 * returns 0 again; the same key with other bytes returns -EEXIST and changes nothing. */

/* The longest prefix of keys[0..count) the object store holds, in *prefix (a chunk chain's
 * cached length, in one call). Works on sim (its SSD tier) and uring. */
TEMPO_EXPORT int tempo_store_lookup(struct tempo_ctx* ctx, const uint64_t* keys, size_t count,
                                    size_t* prefix);
/* Deletes an object from the store: 0, -ENOENT not held, -EOPNOTSUPP on sim. Claims that
 * staged it keep their fast-tier copy until they end. */
TEMPO_EXPORT int tempo_store_delete(struct tempo_ctx* ctx, uint64_t key);

/* The fast tier's memory, for registering it with a GPU runtime once (cudaHostRegister)
 * so copies out of ready extents are DMA from pinned memory: every extent of
 * tempo_claim_extents lies in [*base, *base + *bytes). -EOPNOTSUPP on sim (no bytes). In
 * client mode (device = daemon) it is the daemon's fast tier as this process maps it
 * (read-only). */
TEMPO_EXPORT int tempo_ctx_fast_tier(struct tempo_ctx* ctx, void** base, uint64_t* bytes);

/* Labels a claim with the engine's request id (NUL-terminated, at most 39 bytes), which
 * `tempoctl claims` shows beside it. -ENOENT unknown claim, -EINVAL null or too long. */
TEMPO_EXPORT int tempo_claim_label(struct tempo_ctx* ctx, tempo_claim_id id, const char* request);

/* Asynchronous puts: a writer owns `threads` threads that run tempo_store_put for queued
 * objects, so a worker never waits on a save. The caller keeps each object's bytes valid
 * until its completion is taken. */
struct tempo_writer;
struct tempo_put_completion {
  uint64_t key;
  uint64_t cookie; /* the caller's, from tempo_writer_put */
  int32_t status;  /* tempo_store_put's result */
  uint32_t reserved;
};
/* A writer over ctx (holds a reference). -EINVAL threads 0 or above 64. */
TEMPO_EXPORT int tempo_writer_new(struct tempo_ctx* ctx, unsigned threads,
                                  struct tempo_writer** out);
/* Queues a put; returns at once. -EINVAL no bytes, -ESHUTDOWN writer closing. */
TEMPO_EXPORT int tempo_writer_put(struct tempo_writer* w, uint64_t key, const void* data,
                                  size_t bytes, uint64_t cookie);
/* Moves up to `capacity` finished puts, oldest first, into `out`; *count says how many.
 * Never blocks. */
TEMPO_EXPORT int tempo_writer_completions(struct tempo_writer* w, struct tempo_put_completion* out,
                                          size_t capacity, size_t* count);
/* Waits until no put is queued or running: 0, or -ETIMEDOUT after timeout_ns. */
TEMPO_EXPORT int tempo_writer_wait(struct tempo_writer* w, int64_t timeout_ns);
/* Finishes every queued put, drops the threads and the context reference. */
TEMPO_EXPORT void tempo_writer_free(struct tempo_writer* w);

/* The runtime side: the engine reports what its scheduler sees once per step; the library
 * keeps the shared timeline, estimates each waiting claim's TTU and revises the claims and
 * the waiting order itself (Documentation/engines.md, "The per-step call"). */
struct tempo_runtime;
/* Linear step costs (Documentation/engines.md): a prefill pass costs prefill_pass_ns +
 * prefill_token_ns * n + prefill_pair_ns * n * (context + (n+1)/2), a decode step
 * decode_pass_ns + decode_seq_ns * batch + decode_context_ns * (KV tokens of the batch). */
struct tempo_step_costs {
  double prefill_pass_ns;
  double prefill_token_ns;
  double prefill_pair_ns;
  double decode_pass_ns;
  double decode_seq_ns;
  double decode_context_ns;
  double retrieval_bps; /* fast tier to GPU, bytes/s */
  uint64_t reserved[2]; /* zero */
};
struct tempo_runtime_config {
  struct tempo_step_costs costs; /* the prior: every coefficient >= 0, retrieval_bps > 0 */
  uint32_t max_active;           /* the engine's active-sequence limit (vLLM max_num_seqs) */
  uint32_t generation_limit;     /* max output tokens per request */
  uint32_t learn;                /* nonzero: learn the costs from reported step durations */
  uint32_t history_window;       /* completed outputs kept for conditioning (0: 256) */
  uint64_t reserved[4];          /* zero */
};
/* A running sequence (holds a slot). */
struct tempo_running_seq {
  uint64_t prompt_tokens;   /* whole prompt */
  uint64_t computed_tokens; /* prompt tokens whose KV is on the GPU or being retrieved */
  uint32_t tokens_generated;
  /* ABI 0.6: its whole output, the first token included, when the engine knows it (a
   * max_tokens it generates to the end, a length predictor's answer); 0: projected from the
   * completed outputs (tempo_runtime_finished). Capped by generation_limit. */
  uint32_t output_tokens;
  uint64_t retrieval_bytes; /* KV still to retrieve before its prefill (0 when none) */
};
/* A waiting request, in scheduling order. */
struct tempo_waiting_seq {
  uint64_t prompt_tokens;
  uint64_t cached_tokens; /* the matched prefix its claim retrieves */
  tempo_claim_id claim;   /* TEMPO_NO_CLAIM without one */
  /* KV bytes of the claim, fast tier to GPU; 0: none given (no retrieval time). From 0.7
   * checked against the claim: fewer than its bytes is -EINVAL (the context's log says which
   * entry). */
  uint64_t retrieval_bytes;
};
/* One scheduling step: the state after it, and the measured work of the step just run. */
struct tempo_step {
  const struct tempo_running_seq* running;
  size_t running_count;
  const struct tempo_waiting_seq* waiting;
  size_t waiting_count;
  int64_t duration_ns;             /* the step's measured duration, 0 if none ran */
  uint64_t prefill_tokens;         /* prompt tokens it prefilled */
  uint64_t prefill_context_tokens; /* cached tokens those prefills attended to */
  uint64_t decode_seqs;            /* sequences it decoded one token for */
  uint64_t decode_context_tokens;  /* their KV tokens, summed */
  /* ABI 0.6: a call made while a step runs (e.g. when a request arrives during a long
   * prefill): that step still runs this long, and `running` is as it will leave it (the
   * request it prefills prefilled, its decode batch one token further); the projection
   * starts then. 0 between steps. */
  int64_t busy_ns;
  /* ABI 0.7: the strides of `running` and `waiting`, sizeof(struct tempo_running_seq) and
   * sizeof(struct tempo_waiting_seq) as the caller was compiled, so either struct can grow;
   * 0 reads as their 0.6 size (32 B each). Below it or above TEMPO_STRUCT_SIZE_MAX: -EINVAL;
   * the bytes of an element beyond the struct this library knows must be zero (-EINVAL). */
  uint32_t running_size;
  uint32_t waiting_size;
  uint64_t reserved[2]; /* zero */
};
/* A runtime side over ctx (holds a reference). -EINVAL a zero max_active or
 * generation_limit, a negative coefficient, retrieval_bps <= 0, a nonzero reserved field.
 * `make bench-engines` prints the roofline model's fit for the shipped model files. */
TEMPO_EXPORT int tempo_runtime_new(struct tempo_ctx* ctx, const struct tempo_runtime_config* config,
                                   struct tempo_runtime** out);
/* Frees a runtime side (NULL is ignored) and drops its context reference; its claims stay. */
TEMPO_EXPORT void tempo_runtime_free(struct tempo_runtime* rt);
/* The per-step call: learns from the step's duration (when learning), projects the timeline
 * 20 s out, revises the waiting claims' TTUs (a claim past those 20 s holds a lower bound until
 * it has decayed to 10 s: Documentation/ttu-estimator.md) and updates the waiting order, in
 * one call. -EINVAL an
 * unprojectable snapshot (more running than max_active, output before the prompt is done,
 * a negative busy_ns) or a claim at two places of the queue, -ENOENT a claim the context
 * does not know (nothing changes then for either), -EOVERFLOW a TTU past the clock's range
 * (2^62 ns: busy_ns beyond it, or costs that put a claim that far out; that claim keeps its
 * TTU). Claims already committed or ended keep their state. Under policy tempo-risk (in process or
 * in the daemon) each revision also carries the claim's TTU spread, from the output lengths given
 * to tempo_runtime_finished and the reported durations against the costs' predictions. */
TEMPO_EXPORT int tempo_runtime_step(struct tempo_runtime* rt, const struct tempo_step* step);
/* A request completed with output_tokens generated (at least its first token: -EINVAL for
 * 0): conditions later output lengths. */
TEMPO_EXPORT int tempo_runtime_finished(struct tempo_runtime* rt, uint32_t output_tokens);
/* The step costs in use (the prior until a step is learned) and how many steps were learned. */
TEMPO_EXPORT int tempo_runtime_get_costs(struct tempo_runtime* rt, struct tempo_step_costs* out,
                                         uint64_t* steps_learned);

/* ABI 0.4: the kmod device (tempo.ko, Documentation/kmod.md) ---------------------------- */

/* Where an object lies on tempo.ko's backing device (the SSD tier). The module only reads
 * that device: the object's bytes are written there before they are placed. */
struct tempo_kmod_object {
  uint64_t key;
  uint64_t offset;   /* byte offset on the backing device (= the module's logical range), a
                      * multiple of its extent size (/sys/module/tempo/parameters/extent_kb) */
  uint64_t bytes;    /* > 0 */
  uint64_t reserved; /* zero */
};

/* The kmod device only: makes objects known to the context, all or none: claims may then
 * name them, and tempo_store_lookup() finds them. Two objects never share an extent.
 * Returns 0; -EINVAL zero bytes, an offset that is not extent-aligned, a nonzero reserved
 * field or objects NULL with count > 0; -ERANGE beyond the device; -EEXIST a key placed
 * already (or twice); -EBUSY a range sharing an extent with another object;
 * -EOPNOTSUPP on other devices. Nothing is placed on error. */
TEMPO_EXPORT int tempo_kmod_add_objects(struct tempo_ctx* ctx,
                                        const struct tempo_kmod_object* objects, size_t count);

/* ABI 0.7: one style (Documentation/c-api.md, "ABI 0.7") ------------------------------ */

/* Every handle is reference-counted: tempo_<object>_new returns it holding one reference,
 * tempo_<object>_ref takes one more and returns the handle (NULL stays NULL),
 * tempo_<object>_unref drops one and the last frees it (NULL is ignored). The 0.6 names
 * tempo_config_free, tempo_writer_free and tempo_runtime_free remain and drop one reference. */

/* Takes one more reference on a configuration. */
TEMPO_EXPORT struct tempo_config* tempo_config_ref(struct tempo_config* config);
/* Drops a reference; the last frees the configuration (contexts keep their copy). */
TEMPO_EXPORT void tempo_config_unref(struct tempo_config* config);
/* Takes one more reference on a writer. */
TEMPO_EXPORT struct tempo_writer* tempo_writer_ref(struct tempo_writer* w);
/* Drops a reference; the last finishes every queued put, then frees the writer. */
TEMPO_EXPORT void tempo_writer_unref(struct tempo_writer* w);
/* Takes one more reference on a runtime side. */
TEMPO_EXPORT struct tempo_runtime* tempo_runtime_ref(struct tempo_runtime* rt);
/* Drops a reference; the last frees the runtime side (its claims stay). */
TEMPO_EXPORT void tempo_runtime_unref(struct tempo_runtime* rt);

/* Getters return 0 or -errno and their value through the last pointer (written only on
 * success). The 0.6 forms remain: tempo_ctx_now (a time or -EINVAL in one value),
 * tempo_ctx_device (NULL for a NULL context), tempo_ctx_stats, tempo_ctx_fast_tier,
 * tempo_claim_query, tempo_claim_extents, tempo_key_layer_group (no error path). */

/* The last error message of a configuration ("" if none), copied NUL-terminated into
 * buf[0..size). -ENOSPC when it does not fit (buf holds its start, terminated), -EINVAL a
 * NULL configuration or buffer, or size 0. Safe while other threads use the configuration. */
TEMPO_EXPORT int tempo_config_get_error(const struct tempo_config* config, char* buf, size_t size);
/* The context's clock in ns into *now_ns (virtual on sim, monotonic otherwise). */
TEMPO_EXPORT int tempo_ctx_get_now(struct tempo_ctx* ctx, int64_t* now_ns);
/* The context's device ("sim", "uring", "kmod" or, in client mode, the daemon's) into
 * *device: static storage. */
TEMPO_EXPORT int tempo_ctx_get_device(struct tempo_ctx* ctx, const char** device);
/* tempo_ctx_stats: the counters into *counters, of `size` bytes. */
TEMPO_EXPORT int tempo_ctx_get_stats(struct tempo_ctx* ctx, struct tempo_counters* counters,
                                     size_t size);
/* tempo_ctx_fast_tier: the fast tier's memory. */
TEMPO_EXPORT int tempo_ctx_get_fast_tier(struct tempo_ctx* ctx, void** base, uint64_t* bytes);
/* tempo_claim_query: a claim into *info, of `size` bytes. */
TEMPO_EXPORT int tempo_claim_get_info(struct tempo_ctx* ctx, tempo_claim_id id,
                                      struct tempo_claim_info* info, size_t size);
/* tempo_key_layer_group into *key; -EINVAL a NULL key. */
TEMPO_EXPORT int tempo_key_get_layer_group(uint64_t chain_key, uint32_t group, uint64_t* key);
/* tempo_claim_extents into an array of elements of extent_size bytes (pass sizeof(struct
 * tempo_extent)): each gets the fields both know, zeros for those this library lacks.
 * -EINVAL an extent_size below 16 (the 0.2 struct) or above TEMPO_STRUCT_SIZE_MAX. */
TEMPO_EXPORT int tempo_claim_get_extents(struct tempo_ctx* ctx, tempo_claim_id id,
                                         struct tempo_extent* extents, size_t extent_size,
                                         size_t capacity, size_t* count);
/* tempo_runtime_get_costs into *out, of `size` bytes (pass sizeof(struct tempo_step_costs));
 * steps_learned may be NULL. -EINVAL a size of 0 or above TEMPO_STRUCT_SIZE_MAX. */
TEMPO_EXPORT int tempo_runtime_get_costs_sized(struct tempo_runtime* rt,
                                               struct tempo_step_costs* out, size_t size,
                                               uint64_t* steps_learned);

/* A TTU not known yet, for tempo_claim_report, tempo_claim_report_sized and tempo_claim_revise:
 * a claim reported at the prefix-cache hit, its TTU given later (tempo_claim_revise, or
 * tempo_runtime_step once the claim is in its waiting queue). Until then the claim does not
 * commit on laxity (a retrieval still commits it), and tempo_claim_query reports ttu_ns
 * TEMPO_TTU_UNKNOWN and laxity_ns TEMPO_LAXITY_NONE. A 0.6 library refuses it (-EOVERFLOW).
 * The library keeps it as the clock's far end (2^62 ns): a TTU given beyond 2^61 ns (73
 * years) also reads back as TEMPO_TTU_UNKNOWN. */
#define TEMPO_TTU_UNKNOWN INT64_MAX

/* tempo_claim_report over an array of elements of object_size bytes: pass sizeof(struct
 * tempo_object), so the struct can grow. -EINVAL an object_size below 16 (the 0.1 struct) or
 * above TEMPO_STRUCT_SIZE_MAX, or an element's bytes beyond the struct this library knows
 * that are not zero; otherwise tempo_claim_report's errors. */
TEMPO_EXPORT int tempo_claim_report_sized(struct tempo_ctx* ctx, const struct tempo_object* objects,
                                          size_t count, size_t object_size, int64_t ttu_ns,
                                          tempo_claim_id* id);

/* The waiting queue in scheduling order (TEMPO_NO_CLAIM for requests without a claim), as
 * tempo_order_update (its 0.1-0.6 name, kept): the context's order, so named for its object.
 * -ENOENT if an id is unknown (nothing changes), -EINVAL ids NULL with count > 0. */
TEMPO_EXPORT int tempo_ctx_set_order(struct tempo_ctx* ctx, const tempo_claim_id* ids,
                                     size_t count);

/* An enum tempo_retrieval as it crosses the ABI: 32 bits whatever the compiler makes of an
 * enum. The 0.1-0.6 calls wrote it through an int*. */
typedef uint32_t tempo_retrieval_t;

/* tempo_claim_request_retrieval with *outcome a tempo_retrieval_t (its errors). */
TEMPO_EXPORT int tempo_claim_retrieve(struct tempo_ctx* ctx, tempo_claim_id id,
                                      tempo_retrieval_t* outcome);
/* tempo_claim_wait_ready with *outcome a tempo_retrieval_t (its errors). */
TEMPO_EXPORT int tempo_claim_wait(struct tempo_ctx* ctx, tempo_claim_id id, int64_t timeout_ns,
                                  tempo_retrieval_t* outcome);

/* tempo_writer_completions into an array of elements of completion_size bytes (pass
 * sizeof(struct tempo_put_completion)): each gets the fields both know, zeros for those this
 * library lacks. -EINVAL a completion_size below 24 (the 0.3 struct) or above
 * TEMPO_STRUCT_SIZE_MAX (nothing taken then). */
TEMPO_EXPORT int tempo_writer_get_completions(struct tempo_writer* w,
                                              struct tempo_put_completion* out,
                                              size_t completion_size, size_t capacity,
                                              size_t* count);

/* Per-device sub-objects. A context hands out the part of itself that only one kind of device
 * has, so its calls take a handle that exists only there: the store of a uring context
 * (in process or through tempod), the kmod device's placement, the sim device's virtual time
 * (<tempo/tempo_sim.h>). A sub-object borrows its context: it is the same pointer at every
 * call, has no reference of its own, and is valid while the caller holds a reference on the
 * context (using it after the last tempo_ctx_unref is a use after free). Its calls are
 * serialised as the context's are. The getter returns 0 and the sub-object in *out, or
 * -EOPNOTSUPP when the context's device is another kind (its log function gets a line naming
 * both), -EINVAL a NULL context or out. The 0.2-0.6 calls on the context remain. */
struct tempo_store;
struct tempo_kmod;

/* The object store of a uring context. */
TEMPO_EXPORT int tempo_ctx_get_store(struct tempo_ctx* ctx, struct tempo_store** out);
/* The kmod context's object placement. */
TEMPO_EXPORT int tempo_ctx_get_kmod(struct tempo_ctx* ctx, struct tempo_kmod** out);
/* tempo_store_put on the store (its errors; -EINVAL a NULL store). */
TEMPO_EXPORT int tempo_store_write(struct tempo_store* store, uint64_t key, const void* data,
                                   size_t bytes);
/* tempo_store_lookup on the store: the longest prefix of keys[0..count) it holds, in *prefix. */
TEMPO_EXPORT int tempo_store_get_prefix(struct tempo_store* store, const uint64_t* keys,
                                        size_t count, size_t* prefix);
/* tempo_store_delete on the store (its errors; -EINVAL a NULL store). */
TEMPO_EXPORT int tempo_store_remove(struct tempo_store* store, uint64_t key);
/* tempo_kmod_add_objects over an array of elements of object_size bytes (pass sizeof(struct
 * tempo_kmod_object)). -EINVAL an object_size below 32 (the 0.4 struct) or above
 * TEMPO_STRUCT_SIZE_MAX, or an element's bytes beyond the struct this library knows that are
 * not zero; otherwise tempo_kmod_add_objects' errors. */
TEMPO_EXPORT int tempo_kmod_add_objects_sized(struct tempo_kmod* kmod,
                                              const struct tempo_kmod_object* objects, size_t count,
                                              size_t object_size);

/* One entry of the waiting queue of the last tempo_runtime_step that succeeded, as the
 * runtime side projects it, with or without a claim (tempo_runtime_get_projection). */
struct tempo_waiting_projection {
  /* Until the timeline reaches it (its retrieval, then its prefill, begins), from now: the
   * projection from the step's snapshot, less the time since that step. For an entry with a
   * claim under a point policy, the TTU the step gave its claim. */
  int64_t ttu_ns;
  /* Its whole output as the completed outputs predict it (tempo_runtime_finished), capped by
   * generation_limit: what the projection assumed. */
  uint32_t output_tokens;
  uint32_t flags; /* TEMPO_PROJECTION_F_* */
};
/* tempo_waiting_projection.flags: the entry has a claim. */
#define TEMPO_PROJECTION_F_CLAIM (1u << 0)

/* The projection of every entry of the last successful step's waiting queue, in queue order,
 * into an array of elements of projection_size bytes (pass sizeof(struct
 * tempo_waiting_projection)): the TTU of requests without a claim too, which the step gives
 * no claim. Projects that step's snapshot again, with the costs and completed outputs as they
 * stand now. Sets *count to the queue's length (0 before any step) and writes the entries
 * when capacity allows, else returns -ENOSPC (call again with room for *count). -EINVAL a
 * projection_size below 16 or above TEMPO_STRUCT_SIZE_MAX. */
TEMPO_EXPORT int tempo_runtime_get_projection(struct tempo_runtime* rt,
                                              struct tempo_waiting_projection* out,
                                              size_t projection_size, size_t capacity,
                                              size_t* count);
/* The completed output lengths that condition the projections (tempo_runtime_finished, the
 * last history_window of them), oldest first, into lengths[0..capacity): *count says how many
 * there are. -ENOSPC a capacity below *count (nothing written), -EINVAL a NULL rt or count, or
 * a NULL lengths with a capacity. */
TEMPO_EXPORT int tempo_runtime_get_history(struct tempo_runtime* rt, uint32_t* lengths,
                                           size_t capacity, size_t* count);
/* The point TTU the runtime side last gave each of claims ids[0..count) (reported by the
 * engine and waiting in a step's queue), as of the last step that succeeded, into ttus[i];
 * TEMPO_TTU_UNKNOWN for a claim it gave none. What the step gave, read without a round trip to
 * the context (the connectors give it to the claims that follow a lead). -EINVAL a NULL rt, or
 * NULL ids or ttus with a count. */
TEMPO_EXPORT int tempo_runtime_get_given_ttus(struct tempo_runtime* rt, const tempo_claim_id* ids,
                                              size_t count, int64_t* ttus);

#ifdef __cplusplus
}
#endif

#endif /* TEMPO_TEMPO_H */
