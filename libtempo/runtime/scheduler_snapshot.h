// A bounded, read-only view of the serving engine's scheduler, taken after a scheduling
// iteration: what the TTU estimator projects from. Spans point into the caller's storage.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "core/time.h"

namespace tempo {

using ClaimId = uint64_t;

// A request holding one of the engine's active-sequence slots.
struct RunningRequest {
  // Prompt tokens whose KV is on the GPU, or arriving by the pending retrieval below (the
  // matched prefix counts as done: the prefill attends to it either way).
  uint64_t prompt_tokens_done = 0;
  uint64_t prompt_tokens_remaining = 0;  // prompt tokens still to prefill
  uint32_t tokens_generated = 0;         // output tokens so far (n), the prefill's included
  uint64_t context_tokens = 0;           // tokens in its KV now (prompt + n - 1 when decoding)
  // KV still to retrieve before its prefill can run (admitted, retrieval not finished), and
  // how long from now until that retrieval can start (its staging), if known.
  uint64_t retrieval_bytes_remaining = 0;
  TimeNs ready_in = 0;
  // Its whole output, the first token included, where the engine knows it (a max_tokens it
  // generates to the end, or a length predictor's answer); 0: projected from the history.
  uint32_t output_tokens = 0;
};

// A request in the waiting queue; the queue is given in scheduling (FCFS) order.
struct WaitingRequest {
  uint64_t uncached_prompt_tokens = 0;  // to prefill after retrieval
  uint64_t cached_prompt_tokens = 0;    // matched prefix whose KV is retrieved
  std::optional<ClaimId> claim;         // the staging claim of its matched KV, if any
  uint64_t retrieval_bytes = 0;         // KV bytes to move fast tier -> GPU
  // Known time from now until its KV is stage-ready (0: ready, or nothing known). Delays
  // this request's retrieval for the requests behind it; never its own TTU, which assumes
  // its KV is stage-ready.
  TimeNs ready_in = 0;
  uint32_t output_tokens = 0;  // as RunningRequest::output_tokens
};

struct SchedulerSnapshot {
  std::span<const RunningRequest> running;
  std::span<const WaitingRequest> waiting;
  uint32_t max_active = 4;          // the engine's active-sequence limit (vLLM max_num_seqs)
  uint32_t generation_limit = 128;  // max output tokens per request
  // The projection stops at the first claim it reaches later than this: that claim and the
  // ones behind it get the time it stopped at, a lower bound (ClaimTtu::beyond). kNever: the
  // whole queue is projected.
  TimeNs horizon = kNever;
  // The GPU's work in flight ends this long from now (taken mid-step, e.g. when a request
  // arrives); the running requests are described as that work leaves them (the request it
  // prefills prefilled, its decode batch one token further). 0: between steps.
  TimeNs busy_for = 0;
};

}  // namespace tempo
