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
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cluster_pool.h"
#include "device/interference.h"
#include "metrics/serving_metrics.h"
#include "replay_request.h"
#include "router.h"
#include "runtime/output_length_history.h"
#include "runtime/step_cost_spread.h"
#include "runtime/step_costs.h"
#include "stack/sim_stack.h"

namespace tempo {

// Layer-wise loading (Documentation/engines.md, "Layer-wise loading"): each cached chunk is
// stored as `layer_groups` objects, one per layer group (keys: layer_group_key), and prefill
// runs group by group, group g starting once group g's KV is ready and copied and group g-1's
// prefill is done (a real engine's wait_for_layer_load), each group one share of the prefill.
enum class LayerWise : uint8_t {
  kOff,       // whole-claim readiness: prefill starts once every object is ready
  kWhole,     // the layer-wise engine, one claim per request committed as a whole
  kLead,      // the same claim made layer-wise (set_layers): committed by its lead TTR
  kPerGroup,  // one claim per layer group, group g's TTU g shares of prefill later (vLLM's)
};
std::string_view layer_wise_name(LayerWise mode);
std::optional<LayerWise> parse_layer_wise(std::string_view name);  // off, whole, lead, per-group

// The objects of a chunk's layer groups: keys layer_group_key(chunk key, g), its bytes
// split as evenly as bytes allow.
std::vector<KvObject> layer_group_objects(const KvObject& chunk, uint32_t groups);

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
  // The runtime adapter gives the TTU estimator each request's true output length, as an
  // engine that knew them would (0 otherwise: projected from the output-length history).
  bool known_outputs = false;
  LayerWise layer_wise = LayerWise::kOff;
  uint32_t layer_groups = 4;  // with layer_wise: groups per request (1..kMaxLayerGroups)
};
inline constexpr uint32_t kMaxLayerGroups = 64;

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
  uint32_t engine = 0;  // which engine served it (Deployment), and on which host
  uint32_t host = 0;
  uint64_t reusable_bytes = 0;  // its reusable prefix (a perfect cache's hit) ...
  uint64_t pool_bytes = 0;      // ... and of its hit (kv_bytes), what its host's pool held
};

// How one source's claims committed. A claim is remote when its lookup found objects only
// the pool held, local otherwise. Lead: from its commit to the engine's request for its KV
// (its use); on time: stage-ready by then; late: committed and not ready by then (or never:
// the ordinary path after a failed staging).
struct SourceCommits {
  uint64_t claims = 0;  // reported
  uint64_t committed = 0;
  uint64_t on_time = 0;
  uint64_t late = 0;
  double mean_lead_s = 0;  // over the committed claims whose KV was asked for
  double median_lead_s = 0;
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
  // With several engines, each engine's TTFTs and throughput (its C is 0: protection is the
  // host's, shared by its engines, and counted in `summary` only).
  std::vector<ServingSummary> engines;
  // Hits: the requests' reusable prefixes, what the lookups found (locally or in the pool),
  // and what only the pool held (saved by another host); bytes read from and written
  // through to the pool.
  uint64_t reusable_bytes = 0;
  uint64_t hit_bytes = 0;
  uint64_t pool_hit_bytes = 0;
  uint64_t pool_read_bytes = 0;
  uint64_t pool_written_bytes = 0;
  SourceCommits commits[kSources];  // local claims, remote claims
};

// Several emulated engines (GPUs) in one run: `hosts` hosts, each with its own stack
// (device, fast tier, budget), each serving `engines_per_host` engines with their own FCFS
// queue, TTU estimator and GPU KV memory; `router` places the requests (router.h). With
// `cluster` enabled (sim only), one pool below every host's store (cluster_pool.h).
constexpr uint32_t kMaxDeploymentSize = 256;  // hosts, and engines per host, at most
struct Deployment {
  uint32_t hosts = 1;
  uint32_t engines_per_host = 1;
  Router router = Router::kRoundRobin;
  ClusterModel cluster;
};

class ServingStack;

// Runs one workload to completion on `stack`, whose controller runs `engine.policy` (or
// anything, for dax-l1); `costs` maps GPU work to time (the shared
// execution-time model, or fixed costs in tests); `deployment.engines_per_host` engines
// share the stack (one host only). Throws std::invalid_argument for an invalid
// configuration.
RunResult run_serving(const ReplayWorkload& workload, ServingStack& stack,
                      const EngineConfig& engine, const StepCosts& costs,
                      const Deployment& deployment = {});
// The same on sim stacks built from `stack` with the engine's policy, one per host of the
// deployment, on one virtual driver, every device under `interference`
// (device/interference.h) from the start of the run; throws std::invalid_argument for an
// unknown policy or an invalid window.
RunResult run_serving(const ReplayWorkload& workload, const SimStackConfig& stack,
                      const EngineConfig& engine, const StepCosts& costs,
                      const Interference& interference = {}, const Deployment& deployment = {});

// One engine of a run whose engines are processes of their own (daemon_engines.h), each
// with its own stack surface: serves the requests `mine` (indices in `workload`, in arrival
// order), arriving at `start` plus their arrival times on the stack's driver, to the end.
// The records are those requests' (relative to `start`, in `mine`'s order). Throws
// std::invalid_argument for an invalid configuration, std::logic_error when a request
// never finished.
struct EngineRun {
  std::vector<RequestRecord> requests;
  uint64_t copied_bytes = 0;
};
EngineRun serve_engine(const ReplayWorkload& workload, std::span<const size_t> mine, uint32_t index,
                       ServingStack& stack, const EngineConfig& engine, const StepCosts& costs,
                       TimeNs start);

// Fills a run's totals from its request records (r->requests) and the ledger byte-time
// already in r->ledger_byte_seconds: hosts of the engines, hit bytes, rejections, the
// summary, the claims by source (SourceCommits) and, with several engines, each engine's
// summary.
void summarize_run(RunResult* r, uint32_t engines, uint32_t engines_per_host);

}  // namespace tempo
