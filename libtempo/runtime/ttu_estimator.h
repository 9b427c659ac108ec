// Runtime-side time-to-use (TTU): for every waiting request with a claim, the projected
// time from the snapshot until its fast-tier-to-GPU retrieval begins, assuming its KV is
// stage-ready (paper, section 3.1).
//
// One shared timeline, vLLM-like engine iterations:
//   1. admission: free slots take waiting requests in queue order (FCFS, no skipping);
//   2. every admitted request whose KV can be retrieved runs, in admission order, its
//      retrieval and then its prefill (one pass, producing its first token); a request
//      whose known stage-ready time lies ahead is passed over until it arrives, the others
//      go on (asynchronous KV loading);
//   3. one decode step serves every request past its prefill at once;
//   4. requests reaching their predicted output length leave, freeing their slots.
// A target's TTU is the time step 2 reaches it. Remaining output comes from
// OutputLengthHistory, capped by the generation limit. See Documentation/ttu-estimator.md.
//
// The spread: the same timeline kTtuSamples times, every sequence drawing its remaining
// output independently from the history's population conditioned on what it generated
// (a request not started: from the whole population; Latin hypercube draws, each sequence
// taking every stratum of its distribution once over the samples), and every prefill and decode
// step of sample k taking the (k + 1/2) / kTtuSamples quantile of observed/predicted step time
// (StepCostSpread). Each claim's quantiles are those of its sampled TTUs. Sequences end
// independently, so the first slot frees earlier than any one sequence's mean says: the
// point TTU of a request waiting for a slot sits above its median.
#pragma once

#include <cstdint>
#include <vector>

#include "core/time.h"
#include "runtime/output_length_history.h"
#include "runtime/scheduler_snapshot.h"
#include "runtime/step_cost_spread.h"
#include "runtime/step_costs.h"
#include "runtime/ttu_quantiles.h"

namespace tempo {

inline constexpr size_t kTtuSamples = 32;
// The spread's projections stop this far out: a claim past it in some sample keeps a point
// spread (no claim takes that long to stage), which bounds the spread's cost on a deep queue.
inline constexpr TimeNs kTtuSpreadHorizon = 30 * kNsPerSec;
inline constexpr uint64_t kTtuSpreadSeed = 0x7e3b0c11d5a9f215;

struct ClaimTtu {
  ClaimId claim = 0;
  uint32_t queue_position = 0;  // index in the snapshot's waiting queue
  TimeNs ttu = 0;               // from the snapshot, ns
  TtuQuantiles spread;          // estimate_ttu_spread; TtuQuantiles::point(ttu) otherwise
  // Past the snapshot's horizon in every projection: ttu and spread are lower bounds, each
  // later than the horizon.
  bool beyond = false;
};

// Projects the snapshot and writes one entry per waiting request with a claim, in queue
// order, to *out (cleared first). Reads only its arguments. Returns 0, or -EINVAL for a
// snapshot that cannot be projected (max_active or generation_limit 0, more running than
// slots, a running request with output before its prompt is prefilled, a negative or
// kNever ready_in, a queue longer than UINT32_MAX).
int estimate_ttu(const SchedulerSnapshot& snapshot, const StepCosts& costs,
                 const OutputLengthHistory& history, std::vector<ClaimTtu>* out);
// The same, with each entry's spread projected too (the errors are estimate_ttu's).
int estimate_ttu_spread(const SchedulerSnapshot& snapshot, const StepCosts& costs,
                        const OutputLengthHistory& history, const StepCostSpread& step_spread,
                        std::vector<ClaimTtu>* out);

}  // namespace tempo
