// The TempoKV controller: owns claims and their states, computes laxity TTU(t) - TTR(t),
// and asks the provider to commit eligible claims: pending retrievals first, then the
// runtime's latest request order; a claim blocked for capacity never blocks another.
// Re-evaluates on claim report/revision, order updates, staging progress, capacity release
// and the periodic tick. Never revokes a commitment.
//
// Not thread-safe: its Stack serialises calls (the virtual driver's EventQueue, or the threaded
// driver's event-loop thread).
#pragma once

#include <algorithm>
#include <array>
#include <deque>
#include <functional>
#include <map>
#include <span>
#include <vector>

#include "controller/claim.h"
#include "controller/commit_policy.h"
#include "core/clock.h"
#include "provider/provider.h"

namespace tempo {

struct ControllerConfig {
  PolicySpec policy;
  TimeNs tick_ns = 50 * kNsPerMs;
  // Ended claims stay queryable for this long after they end, and at most this many of them
  // at once; then they are erased with everything kept for them (bounded claim memory).
  TimeNs retain_ns = 10 * kNsPerSec;
  uint64_t retain_claims = 1024;
  friend bool operator==(const ControllerConfig&, const ControllerConfig&) = default;
};

// A placeholder in update_order() for a waiting request that has no claim.
inline constexpr ClaimId kNoClaim = 0;

// The time horizon (2^62 ns, about 146 years): a TTU lies within +-kMaxTimeNs and the clock,
// a deadline or a virtual-time advance never goes past it (-EOVERFLOW), so TTU arithmetic
// cannot overflow.
inline constexpr TimeNs kMaxTimeNs = TimeNs{1} << 62;

enum class RetrievalOutcome : uint8_t {
  kReady,     // stage-ready: begin the transfer
  kWait,      // committed, staging: wait for readiness
  kOrdinary,  // take the ordinary (demand) path
};

class ControllerObserver {
 public:
  virtual ~ControllerObserver() = default;
  virtual void on_claim_ready(ClaimId id) = 0;
  // A committed claim's staging failed: it failed over to the ordinary path.
  virtual void on_claim_ordinary(ClaimId id) = 0;
  // A STAGING claim's object landed (Provider::protects), the claim not yet ready.
  virtual void on_claim_progress(ClaimId /*id*/) {}
};

// Upper bounds (inclusive) of the commit margin histogram's buckets; one more bucket holds
// the margins above the last bound.
inline constexpr std::array<TimeNs, 13> kCommitMarginBoundsNs = {
    -100 * kNsPerMs, -10 * kNsPerMs, -kNsPerMs,      0,
    kNsPerMs,        2 * kNsPerMs,   5 * kNsPerMs,   10 * kNsPerMs,
    20 * kNsPerMs,   50 * kNsPerMs,  100 * kNsPerMs, kNsPerSec,
    10 * kNsPerSec};

struct ControllerStats {
  uint64_t reported = 0;
  uint64_t committed = 0;
  uint64_t capacity_deferrals = 0;  // commit attempts refused for lack of budget
  uint64_t deferred_claims = 0;     // claims refused at least once
  uint64_t ordinary = 0;            // claims served by the ordinary path (incl. failovers)
  uint64_t failovers = 0;           // committed claims whose staging failed
  uint64_t cancelled = 0;
  uint64_t released = 0;
  uint64_t failed = 0;
  uint64_t evaluations = 0;
  uint64_t planned = 0;  // claims PLANNED now
  uint64_t live = 0;     // claims not in a terminal state now
  // Retrievals requested of committed claims: stage-ready already, or still staging.
  uint64_t on_time = 0;
  uint64_t late = 0;
  // Commit margins (TTU - TTR when a claim committed): counts by kCommitMarginBoundsNs
  // bucket, and their sum (their count is `committed`).
  std::array<uint64_t, kCommitMarginBoundsNs.size() + 1> margin_buckets{};
  int64_t margin_sum_ns = 0;
};

// next_due() never wakes the controller sooner than this after an evaluation: a claim whose
// laxity holds steady (its TTR falling as fast as its TTU) is not re-evaluated back to back.
inline constexpr TimeNs kMinDueStep = kNsPerMs;

class Controller final : public ProviderListener {
 public:
  Controller(Provider& provider, const Clock& clock, ControllerConfig config);
  ~Controller() override;
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  void set_observer(ControllerObserver* observer) { observer_ = observer; }
  // Called when a claim is reported, and when an evaluation finds a claim due before the
  // next tick, so a runtime can arm its periodic tick (at next_due() if that comes first).
  void set_wakeup(std::function<void()> wakeup) { wakeup_ = std::move(wakeup); }
  // When a PLANNED claim's rule (TTU - TTR <= 0, or tempo-risk's) will be met if its TTU and
  // TTR hold, for claims due within a tick of the last evaluation; kNever if none is. The
  // rule is then met on time rather than at the tick after. Never less than kMinDueStep
  // after that evaluation.
  TimeNs next_due() const { return next_due_; }

  // Records a hit as a PLANNED claim, metadata only; `ttu` is the time until retrieval is
  // expected to begin. -EINVAL empty manifest or zero-size object, -EOVERFLOW a TTU (or a
  // quantile of the spread) beyond +-kMaxTimeNs or a manifest over the provider's limits. `spread`,
  // when given, is the TTU's distribution (tempo-risk reads it; the point is used otherwise).
  // `group` (0: none) is the claim's share group (set_share).
  int report(const Manifest& manifest, TimeNs ttu, ClaimId* id,
             const TtuQuantiles* spread = nullptr, uint32_t group = 0);
  // A new TTU estimate (and spread). Ignored (0) once committed: commitment is never
  // revoked. -ENOENT unknown, -EINVAL terminal, -EOVERFLOW beyond +-kMaxTimeNs.
  int revise(ClaimId id, TimeNs ttu, const TtuQuantiles* spread = nullptr);
  // The runtime's waiting queue in scheduling order (kNoClaim for requests without one;
  // ended claims are skipped). -ENOENT if an id was never issued; nothing changes then.
  int update_order(std::span<const ClaimId> order);
  // Several engines' waiting queues, each in its own scheduling order: the order is their
  // round robin (every queue's first entry, queues in the order given, then every second
  // one...; a queue that has ended drops out). A claim's rank (queue-K commits each
  // engine's first K) and its requests behind it are those of its own queue. Errors as
  // update_order.
  int update_orders(std::span<const std::span<const ClaimId>> orders);
  // The runtime is about to retrieve: commits now if it can, else the ordinary path.
  // -ENOENT unknown, -EINVAL terminal or transferring, the claim's error if FAILED.
  int request_retrieval(ClaimId id, RetrievalOutcome* outcome);
  // STAGE_READY -> TRANSFERRING. -EAGAIN still staging, -EINVAL otherwise.
  int begin_transfer(ClaimId id);
  // TRANSFERRING -> RELEASED (or CANCELLED if cancelled meanwhile). -EINVAL otherwise.
  int end_transfer(ClaimId id);
  // Uncommitted: at once. Committed: protection is kept until outstanding staging and
  // transfer end. -EINVAL terminal, -EALREADY already cancelled.
  int cancel(ClaimId id);

  // Protected-capacity shares (tempod's engines, Documentation/tempod.md): a claim of share
  // group g != 0 commits only while g's protected bytes plus its own stay within g's part
  // of the budget, budget x weight(g) / the sum of the weights of the groups with live
  // claims. A group without live claims lends its part to the others; commitments are
  // never revoked, so a lender gets its part back as the borrowers' claims end. Weight 0
  // removes the group (its claims then commit against the budget alone).
  struct ShareUse {
    uint32_t weight = 0;
    uint64_t live = 0;             // live claims of the group
    uint64_t protected_bytes = 0;  // bytes of its STAGING, STAGE_READY, TRANSFERRING claims
  };
  void set_share(uint32_t group, uint32_t weight);
  const std::map<uint32_t, ShareUse>& shares() const { return shares_; }
  // The group's part of the budget now (the whole budget for group 0 or an unknown one).
  uint64_t share_bytes(uint32_t group) const;

  // Labels a claim with the engine's request id (listings show it). -ENOENT unknown.
  int label(ClaimId id, std::string request);

  // A layer-wise claim (Provider::set_layers): its laxity is taken against its lead TTR.
  // Ignored (0) once committed. -ENOENT unknown, -EINVAL terminal, groups 0 or more than
  // its objects or per_group_ns < 0, -EOVERFLOW groups x per_group_ns beyond kMaxTimeNs.
  int set_layers(ClaimId id, uint32_t groups, TimeNs per_group_ns);

  // The periodic tick; also usable as "re-evaluate now".
  void tick() { evaluate(); }
  void evaluate();

  const Claim* claim(ClaimId id) const;
  // The ORDINARY claim's ordinary read starts: its keys, once. -ENOENT unknown, -EINVAL not
  // ORDINARY or read already.
  int take_ordinary_read(ClaimId id, std::vector<ObjectKey>* keys);
  // Where a claim's retrieval stands: 0 with kReady (stage-ready or transferring) or
  // kOrdinary; -EAGAIN while PLANNED or STAGING; -ECANCELED released or cancelled; the
  // claim's error (else -EIO) when FAILED; -ENOENT unknown. What waiters poll.
  int readiness(ClaimId id, RetrievalOutcome* outcome) const;
  // Laxity TTU(at) - TTR of a PLANNED claim under the policy's TTR (nullopt otherwise);
  // a layer-wise claim's lead TTR. The caller's `at` is the instant its own TTU was read at,
  // so TTU - laxity is the TTR exactly, however long the call takes.
  std::optional<TimeNs> laxity(ClaimId id, TimeNs at);
  // A claim's TTU as it stands at `at`: what it was reported with, less the time since.
  static TimeNs ttu_at(const Claim& c, TimeNs at);
  ControllerStats stats() const;
  // tempo-risk's feedback state (controller/risk_policy.h).
  const RiskCalibration& risk_calibration() const { return risk_; }
  const ControllerConfig& config() const { return config_; }
  Provider& provider() { return provider_; }
  // Calls f(claim) for up to `max` claims with ids above `after`, in id order.
  template <typename F>
  void for_each_claim(F&& f, ClaimId after = 0, size_t max = SIZE_MAX) const {
    for (auto it = claims_.upper_bound(after); it != claims_.end() && max > 0; ++it, --max)
      f(it->second);
  }
  // Claims held now (live and retained ended ones).
  size_t held_claims() const { return claims_.size(); }

  // ProviderListener
  void on_claim_ready(ClaimId id) override;
  void on_claim_failed(ClaimId id, int error) override;
  void on_claim_progress(ClaimId id) override;
  void on_staging_progress(bool capacity_freed) override;

 private:
  Claim* find(ClaimId id);
  void set_state(Claim& c, ClaimState to);
  bool eligible(Claim& c);
  // The TTU a TTU-driven policy holds TTR against, now (the point TTU, or tempo-risk's);
  // nullopt for the other policies.
  std::optional<TimeNs> threshold(const Claim& c) const;
  // Folds a PLANNED claim that is not eligible into next_due_.
  void note_due(const Claim& c);
  // Where an entry of the order stands in its own engine's queue.
  struct QueuePlace {
    uint64_t rank;    // entries of that queue before it
    uint64_t behind;  // ... and after it
    bool operator==(const QueuePlace&) const = default;
  };
  // Takes `order` as the runtime's latest, `place_at(i)` entry i's QueuePlace.
  template <class PlaceAt>
  int place_order(std::span<const ClaimId> order, PlaceAt place_at);
  // Requests the runtime's latest order places behind `c` in its own engine's queue (0 when
  // it is not in the order).
  uint64_t behind(const Claim& c) const;
  void evaluate_one(Claim& c);
  void attempt(Claim& c);
  void leave_planned(Claim& c);
  void release_claim(Claim& c, ClaimState to);
  // Whether the claim's share group lets it commit now.
  bool within_share(const Claim& c) const;
  TimeNs ttu_now(const Claim& c) const;
  TtrMode ttr_mode() const;
  // Erases ended claims past the retention window or over the retention count.
  void collect();
  void erase_claim(ClaimId id);

  Provider& provider_;
  const Clock& clock_;
  ControllerConfig config_;
  ControllerObserver* observer_ = nullptr;
  std::function<void()> wakeup_;
  TimeNs next_due_ = kNever;
  std::map<ClaimId, Claim> claims_;  // the claim book, in id order
  ClaimId next_id_ = 1;
  uint64_t next_seq_ = 0;
  std::vector<ClaimId> pending_;  // retrieval requested while PLANNED, in request order
  // The runtime's latest order. Nodes of claims_ do not move and a claim leaves this list
  // before it is erased, so the pass walks pointers instead of looking each id up.
  std::vector<Claim*> order_;
  std::vector<ClaimId> merged_;            // update_orders' round robin ...
  std::vector<QueuePlace> merged_places_;  // ... and where each entry stands
  // The order last placed, entry by entry: the same order again changes nothing.
  std::vector<ClaimId> placed_ids_;
  std::vector<QueuePlace> placed_at_;
  std::map<uint64_t, ClaimId> rest_;    // PLANNED claims outside order_, by report order
  std::vector<ClaimId> ready_notices_;  // committed ready during a pass, told after it
  std::deque<ClaimId> ended_;           // ended claims not erased yet, in the order they ended
  bool evaluating_ = false;
  bool again_ = false;
  ControllerStats stats_;
  RiskCalibration risk_;
  std::map<uint32_t, ShareUse> shares_;  // by group
};

}  // namespace tempo
