// Serving-runtime emulation, driving libtempo only through the Stack's claim surface (report,
// revise, order, request retrieval, transfer, ordinary read, query), as vLLM + LMCache would:
// requests arrive; prefix lookup finds cached chunks and reports a claim; FCFS admission up to
// `max_active` sequences; an admitted request requests retrieval (stage-ready claims transfer
// fast-tier -> GPU, staging claims wait for readiness, uncommitted claims without protection take
// the ordinary path); then prefill of the uncached tokens, then decode. After every scheduling
// iteration the TTU estimator projects a scheduler snapshot and the claims are revised and
// reordered. `dax-l1` bypasses the controller: every retrieval reads through the device's memory
// path.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "device/interference.h"
#include "metrics/serving_metrics.h"
#include "replay_request.h"
#include "runtime/output_length_history.h"
#include "runtime/step_cost_spread.h"
#include "runtime/step_costs.h"
#include "stack/sim_stack.h"

namespace tempo {

struct EngineConfig {
  std::string policy = "tempo";  // a commit policy name, or "dax-l1"
  uint32_t max_active = 4;
  uint32_t generation_limit = 128;
  // Object bytes are 1/byte_scale of the model's (real-device runs shrink the KV to fit the
  // machine); retrieval time is modelled on the model's bytes.
  uint64_t byte_scale = 1;
  // The TTU projection stops at the first claim later than this; claims behind it hold a
  // lower bound, revised when it decays to half the horizon. A claim past half the horizon
  // commits under no TTU rule unless its TTR (plus tempo-risk's lead) exceeds that much.
  // kNever: the whole queue every iteration (what the horizon is tested against).
  TimeNs ttu_horizon = 20 * kNsPerSec;
  // GPU memory: KV tokens that fit in HBM after the weights (0: unlimited). A request is
  // admitted only while the running requests' KV leaves room for its own, each counted at
  // what it holds by its end (prompt plus output: no preemption is modelled, so the
  // memory is held from admission); admission stays FCFS, so the head of the queue waits
  // for memory as for a slot.
  uint64_t kv_capacity_tokens = 0;
  // The model's context window (0: none): a request whose prompt plus output does not fit
  // is rejected on arrival and counted, as is one that could never fit in
  // kv_capacity_tokens.
  uint64_t max_context_tokens = 0;
};

enum class RetrievalPath : uint8_t { kNone, kStaged, kOrdinary, kDaxL1, kRejected };

struct RequestRecord {
  uint64_t id = 0;
  RequestTiming timing;
  uint64_t prompt_tokens = 0;
  uint64_t cached_tokens = 0;
  uint64_t kv_bytes = 0;
  RetrievalPath path = RetrievalPath::kNone;
  TimeNs admitted = -1;
  TimeNs kv_available = -1;  // stage-ready, or the ordinary read done
  TimeNs retrieval_start = -1;
  TimeNs retrieval_end = -1;
  ClaimTiming claim;  // when it had a claim
  uint32_t deferrals = 0;
};

struct RunResult {
  std::string policy;
  std::vector<RequestRecord> requests;
  ServingSummary summary;
  uint64_t capacity_deferrals = 0;  // refused commit attempts
  uint64_t deferred_claims = 0;     // claims refused at least once
  uint64_t ordinary_claims = 0;
  // The ledger's byte-time and the bytes moved are in the model's bytes on every device
  // (what the device saw, times byte_scale), so C compares across devices.
  double ledger_byte_seconds = 0;
  TimeNs end_time = 0;
  uint64_t staged_bytes = 0;
  uint64_t demand_bytes = 0;
  uint64_t copied_bytes = 0;  // real devices: fast-tier bytes copied out by transfers
  uint64_t rejected = 0;      // requests refused on arrival (context or GPU memory)
};

class ServingStack;

// Runs one workload to completion on `stack`, whose controller runs `engine.policy` (or
// anything, for dax-l1); `costs` maps GPU work to time (the shared execution-time model,
// or fixed costs in tests). Throws std::invalid_argument for an invalid configuration.
RunResult run_serving(const ReplayWorkload& workload, ServingStack& stack,
                      const EngineConfig& engine, const StepCosts& costs);
// The same on a sim stack built from `stack` with the engine's policy, its device under
// `interference` (device/interference.h) from the start of the run; throws
// std::invalid_argument for an unknown policy or an invalid window.
RunResult run_serving(const ReplayWorkload& workload, const SimStackConfig& stack,
                      const EngineConfig& engine, const StepCosts& costs,
                      const Interference& interference = {});

}  // namespace tempo
