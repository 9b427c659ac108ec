// The runtime side: what an engine's scheduler sees, each step, turned into claims and TTUs
// on the claim surface. One component behind every engine: tempo_runtime_step (the C ABI,
// and through it the Python connectors) and tempo-replay's emulated engines call it; an
// engine only admits, schedules and runs its GPU.
//
// Each step projects the head of the waiting queue (TTU estimator, point or spread), reports
// the hits the engine left to it at their first TTU, revises the claims it knows, and hands
// the waiting order on when it changed:
//   * horizon: the projection stops at the first claim later than `horizon`; it starts with
//     the first kMinWindow requests and doubles while every claim in it lies within the
//     horizon. Claims behind the one it stopped at hold a lower bound later than the
//     horizon and are revised once that bound has decayed to half the horizon (the due
//     queue). kNever: the whole queue every step.
//   * layer-wise reporting: a hit may be one claim, one claim made layer-wise
//     (Stack::set_layers), or one claim per layer group, group g's TTU g group-prefills
//     later (what vLLM's per-layer loading needs).
// Revisions travel in batches (ClaimSurface::revise_all: one round trip to a daemon),
// flushed before each report so the stack sees every operation in the engine's order.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <queue>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/object.h"
#include "runtime/output_length_history.h"
#include "runtime/scheduler_snapshot.h"
#include "runtime/step_cost_spread.h"
#include "runtime/step_costs.h"
#include "runtime/ttu_estimator.h"
#include "surface/claim_surface.h"

namespace tempo {

// The head of the waiting queue projected at first (more as the horizon demands).
inline constexpr size_t kMinWindow = 64;

struct RuntimeSideConfig {
  uint32_t max_active = 4;
  uint32_t generation_limit = 128;
  TimeNs horizon = 20 * kNsPerSec;
  size_t history_window = 256;  // completed outputs that condition output lengths
};

// How a hit becomes claims.
enum class HitClaims : uint8_t {
  kOne,       // one claim of the hit's objects (its manifests concatenated)
  kLayered,   // the same claim made layer-wise (set_layers: `groups` of `per_group` each)
  kPerGroup,  // one claim per manifest (layer group), claim g's TTU g * per_group later
};

// A waiting request as the engine's queue holds it.
struct WaitingEntry {
  uint64_t key = 0;  // the engine's handle of the request, stable while it waits
  bool hit = false;  // it has cached KV: claims (reported, or left to the runtime side)
  // Its tokens, retrieval and known readiness; `claim` is set by the runtime side.
  WaitingRequest request;
};

// The engine's waiting queue in scheduling order, read entry by entry: a step reads only
// the head it projects (and the hits behind it still unreported).
class WaitingView {
 public:
  virtual ~WaitingView() = default;
  virtual size_t size() const = 0;
  virtual WaitingEntry at(size_t position) const = 0;
};

// What a step tells its engine.
class RuntimeListener {
 public:
  virtual ~RuntimeListener() = default;
  // A hit left to the runtime side was reported: its claims, in manifest order.
  virtual void on_reported(uint64_t /*key*/, std::span<const ClaimId> /*claims*/) {}
  // The waiting order changed: every waiting request's claims in queue order (kNoClaim for
  // a request without one), to give the controller (ClaimSurface::update_orders).
  virtual void on_order(std::vector<ClaimId> order) = 0;
};

class RuntimeSide {
 public:
  // `surface` and `costs` outlive the runtime side.
  RuntimeSide(ClaimSurface& surface, const StepCosts& costs, const RuntimeSideConfig& config);

  // A waiting request's hit, reported at its first TTU as `shape` says: `manifests` one per
  // layer group (or one); `groups` and `per_group` the layer-wise claim's.
  void add_hit(uint64_t key, std::vector<Manifest> manifests, HitClaims shape, uint32_t groups,
               TimeNs per_group);
  // A claim the engine reported itself (the C ABI), waiting as request `key`.
  void adopt(uint64_t key, ClaimId claim);
  // The request left the waiting queue (admitted, or gone): its claims are the engine's now.
  void forget(uint64_t key);
  // The claims of a waiting request (empty until reported).
  std::span<const ClaimId> claims(uint64_t key) const;
  // The point TTU request `key`'s first claim was last given, as of `at` (the time since
  // then taken off), or nothing if it was given none: what a step gave, without asking the
  // claim surface (a round trip to the stack's thread or to a daemon).
  std::optional<TimeNs> given_ttu(uint64_t key, TimeNs at) const;

  // One step (see above), at `now` on the engine's clock (the one step after step measures
  // decay on). `busy_for`: the GPU's work in flight ends this long from now;
  // `order_changed`: the queue changed since the last step (an arrival, an admission).
  // 0, or the first error of the estimator (-EINVAL) or of the claim surface (a revision
  // of a claim that ended meanwhile, -EINVAL, is not one).
  int step(TimeNs now, std::span<const RunningRequest> running, const WaitingView& waiting,
           TimeNs busy_for, bool order_changed, RuntimeListener& listener);

  // What conditions the projections: completed outputs; observed against predicted step
  // times (the spread's step factors).
  OutputLengthHistory& history() { return history_; }
  StepCostSpread& step_spread() { return step_spread_; }
  const RuntimeSideConfig& config() const { return config_; }

 private:
  struct Tracked {
    std::vector<Manifest> manifests;  // until reported
    HitClaims shape = HitClaims::kOne;
    uint32_t groups = 1;
    TimeNs per_group = 0;
    std::vector<ClaimId> claims;  // once reported
    TimeNs given = 0;             // the earliest TTU last given (its spread's lowest) ...
    TimeNs given_at = 0;          // ... and when
    bool ever_given = false;      // a TTU from the runtime side (an adopted claim: not yet)
    TimeNs given_ttu = 0;         // the point TTU last given, as of given_at
  };
  // A claim past the horizon, to revise at `at` (if it was given nothing since given_at).
  struct Due {
    TimeNs at = 0;
    uint64_t key = 0;
    TimeNs given_at = 0;
    bool operator>(const Due& o) const { return at > o.at; }
  };

  // Gives request `key` its TTU: reports its hit, or revises its claims unless both the TTU
  // and the last one given lie past the horizon (the last not yet decayed to half of it).
  int give(uint64_t key, TimeNs ttu, const TtuQuantiles& spread, bool beyond,
           RuntimeListener& listener);
  int report(uint64_t key, Tracked& t, TimeNs ttu, const TtuQuantiles& spread,
             RuntimeListener& listener);
  int flush_revisions();
  std::vector<ClaimId> order_of(const WaitingView& waiting) const;

  ClaimSurface& surface_;
  const StepCosts& costs_;
  RuntimeSideConfig config_;
  OutputLengthHistory history_;
  StepCostSpread step_spread_;
  std::unordered_map<uint64_t, Tracked> tracked_;
  std::priority_queue<Due, std::vector<Due>, std::greater<Due>> due_;
  std::vector<uint64_t> ungiven_;  // adopted since the last step: given nothing yet
  size_t window_ = kMinWindow;
  TimeNs now_ = 0;         // the step's
  bool reported_ = false;  // this step reported a claim: the order changed
  // Scratch reused by every step.
  std::vector<RunningRequest> running_;
  std::vector<WaitingRequest> waiting_;
  std::vector<uint64_t> keys_;
  std::vector<ClaimTtu> ttus_;
  std::vector<ClaimSurface::Revision> revisions_;
  std::deque<TtuQuantiles> spreads_;  // the pending revisions' (stable addresses)
  std::vector<int> statuses_;
};

}  // namespace tempo
