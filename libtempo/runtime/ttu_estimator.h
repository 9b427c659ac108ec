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
// The spread: the same timeline once per level of kTtuLevels, every sequence generating the
// level's conditional quantile of its remaining output and every prefill and decode step
// taking the level's quantile of observed/predicted step time (StepCostSpread). All
// sequences move together (short outputs and fast steps at low levels), so the spread is
// wide rather than narrow: it errs toward committing early.
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
