// USDT probes of libtempo (provider `tempo`), read by ebpf/ tools and bpftrace scripts.
//
// Each macro expands to one DTRACE_PROBEn of <sys/sdt.h>: the site is a single `nop` plus an
// ELF note (.note.stapsdt) naming the provider, the probe and where its arguments live. No
// semaphore is used, so a site costs the nop and nothing is checked at run time; a tracer
// turns the nop into a breakpoint when it attaches. Pass plain values already computed: the
// arguments are evaluated even when nothing is attached. Documentation/observability.md holds
// the argument table. Identifiers and byte counts are u64; times and status are s64 (ns).
#pragma once

#if defined(__has_include)
#if !__has_include(<sys/sdt.h>)
#error "core/probes.h needs <sys/sdt.h>: install systemtap-sdt-dev (scripts/deps.sh ebpf)"
#endif
#endif
#include <sys/sdt.h>

// Arguments in registers or immediates only: a memory operand may come out as `sym+off(%rip)`,
// which libbpf's and bpftrace's USDT argument parsers reject. The macro is read at each
// probe's expansion, so redefining it here is enough.
#undef STAP_SDT_ARG_CONSTRAINT
#define STAP_SDT_ARG_CONSTRAINT nr

#ifdef __cplusplus
#include <cstdint>
#else
#include <stdint.h>
#endif

#define TEMPO_PROBE_U64_(x) ((uint64_t)(x))
#define TEMPO_PROBE_S64_(x) ((int64_t)(x))

// A claim was reported: `bytes` of KV in `n_objects` objects, needed in `ttu_ns` from now.
#define TEMPO_PROBE_CLAIM_REPORT(claim_id, bytes, n_objects, ttu_ns)                       \
  DTRACE_PROBE4(tempo, claim__report, TEMPO_PROBE_U64_(claim_id), TEMPO_PROBE_U64_(bytes), \
                TEMPO_PROBE_U64_(n_objects), TEMPO_PROBE_S64_(ttu_ns))

// The claim's time to use was revised to `ttu_ns` from now.
#define TEMPO_PROBE_CLAIM_REVISE(claim_id, ttu_ns) \
  DTRACE_PROBE2(tempo, claim__revise, TEMPO_PROBE_U64_(claim_id), TEMPO_PROBE_S64_(ttu_ns))

// The controller committed the claim, adding `new_reserved_bytes` to the protected-capacity
// ledger (objects already protected or reserved count once, so this may be below the claim's
// bytes); staging needs `ttr_ns` and `laxity_ns` = TTU - TTR at the commit.
#define TEMPO_PROBE_CLAIM_COMMIT(claim_id, new_reserved_bytes, ttr_ns, laxity_ns) \
  DTRACE_PROBE4(tempo, claim__commit, TEMPO_PROBE_U64_(claim_id),                 \
                TEMPO_PROBE_U64_(new_reserved_bytes), TEMPO_PROBE_S64_(ttr_ns),   \
                TEMPO_PROBE_S64_(laxity_ns))

// Commit deferred for capacity: `needed_bytes` did not fit `budget_bytes` with the ledger at
// `ledger_bytes`.
#define TEMPO_PROBE_CLAIM_DEFER(claim_id, needed_bytes, ledger_bytes, budget_bytes)              \
  DTRACE_PROBE4(tempo, claim__defer, TEMPO_PROBE_U64_(claim_id), TEMPO_PROBE_U64_(needed_bytes), \
                TEMPO_PROBE_U64_(ledger_bytes), TEMPO_PROBE_U64_(budget_bytes))

// A staging read of `bytes` for object `object_key` was submitted to the device.
#define TEMPO_PROBE_STAGE_SUBMIT(object_key, bytes) \
  DTRACE_PROBE2(tempo, stage__submit, TEMPO_PROBE_U64_(object_key), TEMPO_PROBE_U64_(bytes))

// A staging read completed after `latency_ns`; `status` is 0 or a negative errno.
#define TEMPO_PROBE_STAGE_COMPLETE(object_key, bytes, latency_ns, status)                      \
  DTRACE_PROBE4(tempo, stage__complete, TEMPO_PROBE_U64_(object_key), TEMPO_PROBE_U64_(bytes), \
                TEMPO_PROBE_S64_(latency_ns), TEMPO_PROBE_S64_(status))

// Every object of the claim is staged: `bytes` are ready in the fast tier.
#define TEMPO_PROBE_CLAIM_READY(claim_id, bytes) \
  DTRACE_PROBE2(tempo, claim__ready, TEMPO_PROBE_U64_(claim_id), TEMPO_PROBE_U64_(bytes))

// The retrieval of the claim began; `margin_ns` = request time - ready time (> 0: ready early,
// < 0: late, the request waited that long).
#define TEMPO_PROBE_TRANSFER_BEGIN(claim_id, bytes, margin_ns)                               \
  DTRACE_PROBE3(tempo, transfer__begin, TEMPO_PROBE_U64_(claim_id), TEMPO_PROBE_U64_(bytes), \
                TEMPO_PROBE_S64_(margin_ns))

// The retrieval of the claim ended after `duration_ns`.
#define TEMPO_PROBE_TRANSFER_END(claim_id, bytes, duration_ns)                             \
  DTRACE_PROBE3(tempo, transfer__end, TEMPO_PROBE_U64_(claim_id), TEMPO_PROBE_U64_(bytes), \
                TEMPO_PROBE_S64_(duration_ns))

// The claim released `freed_bytes`; the ledger now reserves `ledger_bytes`.
#define TEMPO_PROBE_CLAIM_RELEASE(claim_id, freed_bytes, ledger_bytes)                            \
  DTRACE_PROBE3(tempo, claim__release, TEMPO_PROBE_U64_(claim_id), TEMPO_PROBE_U64_(freed_bytes), \
                TEMPO_PROBE_U64_(ledger_bytes))

// The claim was cancelled while in `state` (the controller's claim state number).
#define TEMPO_PROBE_CLAIM_CANCEL(claim_id, state) \
  DTRACE_PROBE2(tempo, claim__cancel, TEMPO_PROBE_U64_(claim_id), TEMPO_PROBE_U64_(state))

// The claim of `bytes` takes the ordinary path (no staging commitment).
#define TEMPO_PROBE_CLAIM_ORDINARY(claim_id, bytes) \
  DTRACE_PROBE2(tempo, claim__ordinary, TEMPO_PROBE_U64_(claim_id), TEMPO_PROBE_U64_(bytes))

// Object `object_key` of `bytes` was evicted from the fast tier.
#define TEMPO_PROBE_EVICT(object_key, bytes) \
  DTRACE_PROBE2(tempo, evict, TEMPO_PROBE_U64_(object_key), TEMPO_PROBE_U64_(bytes))
