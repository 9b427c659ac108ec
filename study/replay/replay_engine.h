// One emulated engine (GPU) of tempo-replay: its FCFS queue, running batch, GPU KV memory
// and GPU step emulation, serving the requests routed to it through the (possibly shared)
// stack of its host. Its claims and TTUs go through the product's runtime side
// (runtime/runtime_side.h), which reads the engine's waiting queue (WaitingView) and tells
// it which claims it reported (RuntimeListener). Its parts, a file each:
//   engine_admission.cc   arrivals, prefix lookup, FCFS admission, retrieval, scheduling
//   engine_gpu.cc         the GPU step loop: retrieval and prefill, decode, completion
//   engine_layer_wise.cc  layer-wise loading: layer groups ready, copied and prefilled
//   engine_runtime.cc     the engine as the runtime side sees it
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "runtime/runtime_side.h"
#include "serving_engine.h"
#include "serving_stack.h"

namespace tempo {

// Where a request stands in its engine.
enum class RequestPhase : uint8_t { kArriving, kWaiting, kAwaitKv, kKvReady, kDecoding, kDone };

// A request of the engine, from its arrival to its end.
struct LiveRequest {
  const ReplayRequest* req = nullptr;
  size_t index = 0;  // in the workload
  RequestRecord rec;
  std::vector<KvObject> hit;    // cached chunks found at lookup
  std::vector<ObjectKey> keys;  // their keys, for demand reads
  uint64_t uncached_tokens = 0;
  ClaimId claim = 0;
  RequestPhase phase = RequestPhase::kArriving;
  bool retrieved = false;
  uint32_t generated = 0;
  // Layer-wise: each group's objects; the claims (one, or one per group with kPerGroup,
  // claims[0] == claim) and which of them took the ordinary path; when each group's KV
  // became ready (-1: not yet); the group a stalled prefill waits for (-1: none); one group's
  // share of the prefill.
  std::vector<Manifest> groups;
  std::vector<ClaimId> claims;
  std::vector<uint8_t> ordinary;
  std::vector<TimeNs> group_ready;
  int64_t stalled = -1;
  TimeNs group_prefill = 0;
};

// Publishes an engine's waiting order (its claims, kNoClaim for requests without one).
using OrderSink = std::function<void(std::vector<ClaimId>)>;

class ReplayEngine final : private RuntimeListener, private WaitingView {
 public:
  // `mine`: the indices in `w` of the requests routed here, in arrival order.
  // `reusable`: the objects later requests reuse, which a request that computes them saves
  // (null: nothing is saved, the workload's objects are all preloaded).
  ReplayEngine(const ReplayWorkload& w, const std::vector<size_t>& mine, uint32_t index,
               ServingStack& stack, const EngineConfig& cfg, const StepCosts& costs,
               OrderSink order, const std::unordered_set<ObjectKey>* reusable);
  bool done() const { return finished_ == live_.size(); }
  uint64_t copied_bytes() const { return copied_bytes_; }
  // On the driver: request k (of mine) arrives at `start` plus its arrival time.
  void schedule_arrival(size_t k, TimeNs start);
  // Moves the records, relative to `start`, to (*out)[workload index].
  void collect(TimeNs start, std::vector<RequestRecord>* out);
  // A claim can be ready inside its own report() (every object already resident), before
  // its id is known here: it is still waiting then, and admission finds it ready. Claims
  // of the host's other engines are not found here and ignored.
  void on_claim_ready(ClaimId id);
  void on_claim_ordinary(ClaimId id);
  // Layer-wise, one claim per request: some of its objects landed; groups whose objects all
  // did may start.
  void on_claim_progress(ClaimId id);

 private:
  TimeNs now() const { return st_.driver().now(); }
  // Keeps the claim's timing once it ended (the stack erases ended claims after a while).
  void record_claim(LiveRequest& l);
  // Replays across hosts: the reusable chunks this request computed (those after its hit)
  // go to its host's store, and through it to the pool.
  void save_computed(const LiveRequest& l);
  // KV tokens a request holds in GPU memory by its end (its prompt and its output); held
  // from admission, as no preemption is modelled.
  uint64_t kv_tokens(const LiveRequest& l) const;
  void arrive(size_t i);
  // Scheduling: FCFS admission into free slots, then this iteration's GPU work.
  void start_iteration();
  void admit(LiveRequest& l);
  // The ordinary path: the claim's ordinary read (or the dax-l1 baseline's device reads)
  // fetches what is not resident from SSD.
  void read_ordinary(LiveRequest& l, RetrievalPath path);
  void kv_available(LiveRequest& l);
  // Layer-wise: which of the request's claims `id` is.
  static size_t claim_index(const LiveRequest& l, ClaimId id);
  // Admission of a layer-wise request: each claim's retrieval; groups ready now start, the
  // others as they land (or as their ordinary read ends).
  void admit_layered(LiveRequest& l);
  // Claim c's ordinary read: its groups are ready once it is done.
  void read_ordinary_claim(LiveRequest& l, size_t c);
  // Every group claim c holds is ready: all of them (one claim), or group c (one per group).
  void claim_groups_ready(LiveRequest& l, size_t c);
  // One claim per request: the groups whose objects (manifest positions g * n / G onwards,
  // the claim's manifest being group-major) are all resident and protected.
  void objects_landed(LiveRequest& l);
  // Group g's KV is ready: the request may run once group 0's is; a prefill stalled on
  // group g goes on.
  void group_ready(LiveRequest& l, uint32_t g);
  // Layer-wise prefill, group by group: group g's copy to the GPU once its KV is ready
  // (the whole claim transferring for the last group's copy; claim g's own with one per
  // group), then its share of the prefill, then group g + 1.
  void run_group(LiveRequest& l, uint32_t g);
  TimeNs group_copy_time(const LiveRequest& l) const;
  // Prefill done: the first token, then decode (or the end).
  void first_token(LiveRequest& l);
  // Runs this iteration's retrievals and prefills in admission order, then one decode step.
  void step();
  void end_iteration();
  void finish(LiveRequest& l);
  // How a hit becomes claims, by the layer-wise mode.
  HitClaims hit_claims() const;
  // The runtime side, after every scheduling iteration: the running requests as the GPU's
  // work in flight leaves them, the waiting queue (this engine's WaitingView); new hits are
  // reported, the others revised, the order published when it changed.
  void update_estimates();
  // WaitingView: the queue, as the runtime side reads it.
  size_t size() const override { return waiting_.size(); }
  WaitingEntry at(size_t q) const override;
  // RuntimeListener: request `key`'s hit became claims; the waiting order changed.
  void on_reported(uint64_t key, std::span<const ClaimId> claims) override;
  void on_order(std::vector<ClaimId> order) override { publish_order_(std::move(order)); }
  // How long until a committed, still staging claim is stage-ready (the stack's TTR).
  TimeNs committed_ready_in(const LiveRequest& l) const;
  EngineConfig cfg_;
  const StepCosts& costs_;
  ServingStack& st_;
  OrderSink publish_order_;
  const std::unordered_set<ObjectKey>* reusable_;
  size_t finished_ = 0;
  uint64_t copied_bytes_ = 0;
  bool dax_ = false;
  RuntimeSide runtime_;
  bool layered_ = false;  // cfg_.layer_wise != kOff
  std::vector<LiveRequest> live_;
  std::deque<size_t> waiting_;
  std::vector<size_t> running_;
  std::unordered_map<ClaimId, size_t> by_claim_;
  uint64_t kv_used_ = 0;  // GPU KV tokens held by the running requests
  bool order_changed_ = false;
  bool gpu_busy_ = false;
  static constexpr size_t kNone = SIZE_MAX;
  // The GPU's work in flight: when it is predicted to end, the request it retrieves and
  // prefills (kNone: none), the decode batch it steps.
  TimeNs busy_until_ = 0;
  size_t prefilling_ = kNone;
  std::vector<size_t> decoding_;
  bool scheduling_ = false;
  std::vector<size_t> iter_ready_, iter_batch_;
  size_t iter_pos_ = 0;
};

}  // namespace tempo
