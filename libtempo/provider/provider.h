// The storage-side staging provider: maps claims' manifests to device objects, projects
// TTR from its staging queue without doing I/O, keeps the protected-capacity ledger,
// commits claims (coalescing shared staging, reserving only bytes no other committed claim
// covers), reports readiness and releases protection.
//
// Not thread-safe: the Stack's driver serialises calls.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/clock.h"
#include "core/object.h"
#include "device/device.h"
#include "provider/capacity_ledger.h"
#include "provider/rate_estimator.h"
#include "provider/staging_projection.h"

namespace tempo {

// Limits of one manifest: objects, and bytes summed over them (1 PiB, far above any fast
// tier, far below where a sum of sizes could wrap).
inline constexpr size_t kMaxManifestObjects = size_t{1} << 20;
inline constexpr uint64_t kMaxManifestBytes = uint64_t{1} << 50;

using ClaimId = uint64_t;

enum class TtrMode : uint8_t {
  kStateAware,  // the projection of the staging queue at the learned rate (TempoKV)
  kStatic,      // the claim alone: non-resident bytes at a fixed rate (TempoKV-Static)
};

struct ProviderConfig {
  uint64_t budget_bytes = 50ull << 30;
  double calibration_rate_bps = 11.0 * (1ull << 30);  // the learned rate starts here
  double static_rate_bps = 11.0 * (1ull << 30);       // TempoKV-Static's fixed rate
  TimeNs rate_window_ns = 2 * kNsPerSec;              // active staging time the rate spans
  uint32_t staging_slots = 0;                         // 0: the device's
  friend bool operator==(const ProviderConfig&, const ProviderConfig&) = default;
};

class ProviderListener {
 public:
  virtual ~ProviderListener() = default;
  virtual void on_claim_ready(ClaimId id) = 0;
  // Staging of one of the claim's objects failed; the claim must be released.
  virtual void on_claim_failed(ClaimId id, int error) = 0;
  // A staging operation ended (TTRs moved); `capacity_freed` when the ledger shrank.
  virtual void on_staging_progress(bool capacity_freed) = 0;
  // One of a committed claim's objects became resident and protected, the claim still
  // waiting for others (per-object readiness, for layer-wise engines).
  virtual void on_claim_progress(ClaimId /*id*/) {}
};

struct CommitResult {
  int status = 0;             // 0, -ENOSPC (budget), -ENOENT/-EINVAL (invalid object), ...
  uint64_t new_bytes = 0;     // bytes this commit added to the ledger
  uint64_t needed_bytes = 0;  // on -ENOSPC: bytes that did not fit
  bool ready = false;         // every object already resident and protected
};

struct ProviderStats {
  uint64_t budget_bytes = 0;
  uint64_t ledger_bytes = 0;    // protected + reserved, shared objects once
  uint64_t reserved_bytes = 0;  // part of the ledger still staging
  uint64_t outstanding_ops = 0;
  uint64_t stage_submitted = 0;
  uint64_t stage_completed = 0;
  uint64_t stage_failed = 0;
  uint64_t staged_bytes = 0;
  uint64_t commits = 0;
  uint64_t capacity_deferrals = 0;
  double effective_rate_bps = 0;
  double ledger_byte_seconds = 0;
  // The remote source (a cluster pool): its outstanding reads, learned rate and latency.
  uint64_t remote_outstanding_ops = 0;
  double remote_rate_bps = 0;
  TimeNs remote_latency_ns = 0;
};

// Bounds on a TTR: lower <= TTR <= upper.
struct TtrRange {
  TimeNs lower = 0;
  TimeNs upper = 0;
};

// The provider's part of one claim's record: the claim's objects and byte counts, its
// commitment and the staging it waits for, and what the TTR projection keeps for it. The
// claim book holds it (the controller's Claim embeds one, controller/claim.h; a Provider's
// own tests keep a small book of their own) and the provider works on it by reference:
// there is no per-claim map in the provider. While tracked, the provider's object records
// point at it, so it never moves or copies; untrack() or release() empties it.
class ClaimStaging {
 public:
  ClaimStaging() = default;
  ClaimStaging(const ClaimStaging&) = delete;
  ClaimStaging& operator=(const ClaimStaging&) = delete;

  ClaimId id() const { return id_; }
  // Between track() and untrack() or release().
  bool tracked() const { return tracked_; }
  bool committed() const { return committed_; }
  // Committed, every object resident and protected.
  bool ready() const { return committed_ && pending_ == 0; }
  // Unique bytes of the manifest (0 when not tracked).
  uint64_t bytes() const { return bytes_; }

 private:
  friend class Provider;
  ClaimStaging& operator=(ClaimStaging&&) = default;  // the provider empties a record
  // An uncommitted claim as one source's projection reads it: the reads a commit would
  // issue there (manifest order, equal neighbours as runs), the objects covered by its
  // outstanding staging, and the work (bytes from the source's anchor) by which the last
  // of them lands, kept for projection epoch `epoch`. The last exact placement of the
  // reads, kept across epochs: the slots it started from and the tag its last read ended at,
  // which bound the placement after any later layout (QueueProjection::distance).
  struct Profile {
    std::vector<ReadRun> reads;
    uint64_t read_bytes = 0;
    std::vector<ObjectKey> covered;
    uint64_t work = 0;
    uint64_t epoch = UINT64_MAX;
    std::vector<uint64_t> basis;  // empty until placed
    uint64_t end = 0;
  };

  ClaimId id_ = 0;
  bool tracked_ = false;
  bool committed_ = false;
  std::vector<ObjectKey> objects_;  // unique, manifest order
  uint64_t bytes_ = 0;
  uint32_t pending_ = 0;  // committed: objects not yet resident and protected
  // What only an uncommitted claim needs, on the heap from track() to commit (an ended
  // claim's record stays small in the book for its retention).
  struct Planned {
    // Per source: bytes needing new reads, bytes our outstanding staging will bring.
    std::array<uint64_t, kSources> absent{};
    std::array<uint64_t, kSources> covered{};
    // What the projection keeps (a cache: the provider refreshes it through a const
    // record), per source, stale together.
    std::array<Profile, kSources> sources;
    bool profile_stale = true;
    // Bounds on the TTR for the layouts of epoch `range_epoch` at time `range_at`: one pass
    // asks a claim several questions.
    TtrRange range;
    uint64_t range_epoch = UINT64_MAX;
    TimeNs range_at = 0;
    // Nothing to read or wait for: the TTR is 0.
    bool nothing_to_stage() const {
      for (size_t s = 0; s < kSources; ++s)
        if (absent[s] != 0 || covered[s] != 0) return false;
      return true;
    }
    uint32_t groups = 1;  // layer groups (set_layers)
    TimeNs per_group_ns = 0;
  };
  std::unique_ptr<Planned> planned_;
};

class Provider final : public DeviceObserver {
 public:
  Provider(Device& device, const Clock& clock, ProviderConfig config);
  ~Provider() override;
  Provider(const Provider&) = delete;
  Provider& operator=(const Provider&) = delete;

  void set_listener(ProviderListener* listener) { listener_ = listener; }
  Device& device() { return device_; }

  // Every call below takes the claim's record in the claim book (ClaimStaging); the
  // listener hears of a claim by its id.
  //
  // Tracks `c` as claim `id`: remembers the uncommitted claim's manifest (duplicates in it
  // count once). Metadata only: no I/O, no reservation. -EEXIST `c` tracked already,
  // -EINVAL empty manifest, a zero-size object or more than kMaxManifestObjects, -EOVERFLOW
  // more than kMaxManifestBytes in all.
  int track(ClaimStaging& c, ClaimId id, const Manifest& manifest);
  // Forgets an uncommitted claim and empties its record. -ENOENT not tracked, -EBUSY
  // committed (release it instead).
  int untrack(ClaimStaging& c);

  // Time for the claim to become resident and protected if committed now (0 if it is).
  // Each source (device.h: the local SSD, the cluster pool) is projected apart, with its
  // own queue, slots and learned rate; a new read from the pool also waits the pool's
  // learned latency. The claim's TTR is its latest source's. An uncommitted claim's state-aware TTR
  // is kept per claim and recomputed only when the staging queue, the rate or the residency of one
  // of its objects changed, or when time moved past the point where a slot would be free for its
  // reads.
  // nullopt when not tracked.
  std::optional<TimeNs> ttr(const ClaimStaging& c, TtrMode mode);
  // ttr(c, mode) >= threshold, decided from cheap bounds where they settle it.
  bool ttr_at_least(const ClaimStaging& c, TimeNs threshold, TtrMode mode);
  // A bound lead_ttr(c, mode) never exceeds, from what is kept where that is cheaper than
  // the TTR itself (0 when not tracked).
  TimeNs lead_ttr_at_most(const ClaimStaging& c, TtrMode mode);
  // Layer-wise claims (engines load KV per layer group during prefill): the claim's
  // objects, in manifest order, form `groups` consecutive groups (object j of n in group
  // j * groups / n), group g needed `g * per_group_ns` after retrieval begins. Laxity is
  // then taken against the claim's lead TTR, the latest of (group g's TTR - g *
  // per_group_ns): the claim may commit later when its first groups will be ready in time
  // though its last land during prefill. One group undoes it. -ENOENT not tracked, -EBUSY
  // committed, -EINVAL groups 0 or more than the claim's objects, per_group_ns < 0,
  // -EOVERFLOW groups x per_group_ns beyond 2^62 ns.
  int set_layers(ClaimStaging& c, uint32_t groups, TimeNs per_group_ns);
  // The TTR laxity is taken against: ttr(), or a layer-wise claim's lead TTR under the
  // state-aware mode (TempoKV-Static ignores layers).
  std::optional<TimeNs> lead_ttr(const ClaimStaging& c, TtrMode mode);
  // The state-aware TTR recomputed from scratch, with nothing kept between calls: the queue
  // advanced to now, the claim's reads appended, every operation placed by linear scans.
  // What the tests hold ttr() to, to the nanosecond.
  // nullopt when not tracked or committed.
  std::optional<TimeNs> reference_ttr(const ClaimStaging& c) const;

  // Rechecks validity and capacity, then protects resident objects and stages the rest.
  // -ENOENT not tracked, -EALREADY committed.
  CommitResult commit(ClaimStaging& c);
  // Ends the claim's protection, forgets it and empties its record; bytes no other
  // committed claim protects return to the budget once their staging is done. Returns the
  // bytes freed now, or -ENOENT not tracked, -EINVAL not committed.
  int64_t release(ClaimStaging& c);
  // Whether an object is resident and protected (pinned for a committed claim).
  bool protects(ObjectKey key) const;
  const CapacityLedger& ledger() const { return ledger_; }
  ProviderStats stats() const;
  double effective_rate_bps() const { return rate_.rate_bps(); }
  const LatencyRateEstimator& remote_estimator() const { return remote_; }

  // Invariant checks for tests: the ledger recomputed from per-object state, and the device
  // pins the provider believes it holds.
  uint64_t recompute_ledger_bytes() const;
  uint64_t held_pins() const;

  // DeviceObserver
  void on_stage_complete(const StageCompletion& c) override;
  void on_resident(ObjectKey key) override;
  void on_evicted(ObjectKey key) override;

 private:
  enum class Cls : uint8_t { kAbsent, kCovered, kResident };  // as a TTR projection sees it
  struct ObjRec {
    uint64_t bytes = 0;
    uint32_t refs = 0;     // committed claims protecting it
    bool staging = false;  // our stage operation is outstanding
    bool pinned = false;   // we hold the device pin: resident and protected
    Cls cls = Cls::kAbsent;
    Source source = Source::kLocal;  // where a stage reads it (asked again when absent)
    // Records (in the claim book) of the uncommitted claims that include it, and of the
    // committed claims waiting for its staging.
    std::unordered_set<ClaimStaging*> planned;
    std::vector<ClaimStaging*> waiters;
  };
  using Profile = ClaimStaging::Profile;
  struct Op {
    ObjectKey key;
    uint64_t bytes;
    uint64_t remaining;  // at the lane's anchor
    TimeNs submitted;
  };
  // Where the projection stands now: its tag, and the work done by then.
  struct Now {
    uint64_t tag = 0;
    uint64_t done = 0;
  };
  // One source's outstanding staging and its projection.
  struct Lane {
    std::vector<Op> ops;  // issue order
    std::unordered_map<ObjectKey, size_t> index;
    TimeNs anchor = 0;  // ops[i].remaining are as of then
    QueueProjection projection;
    bool stale = true;
    TimeNs now_at = -1;  // now is for this time and epoch
    uint64_t now_epoch = UINT64_MAX;
    Now now;
    uint64_t epoch = UINT64_MAX;  // the provider's epoch when projection was built
    // place()'s: single runs placed for `placed_epoch` and `placed_from`, by run.
    std::unordered_map<uint64_t, std::pair<ReadRun, uint64_t>> placed;
    uint64_t placed_epoch = UINT64_MAX;
    uint64_t placed_from = 0;
  };

  Cls classify(ObjectKey key, const ObjRec& o) const;
  // Moves the object to `cls` for every uncommitted claim that includes it; an object that
  // becomes absent is asked its source again (a pool object kept locally reads locally).
  void set_cls(ObjectKey key, ObjRec& o, Cls cls);
  // Moves the object to `cls` from `source` for every uncommitted claim that includes it.
  void move_object(ObjRec& o, Cls cls, Source source);
  Lane& lane(Source s) { return lanes_[static_cast<size_t>(s)]; }
  double rate_bps(Source s) const;
  TimeNs latency_ns(Source s) const { return s == Source::kRemote ? remote_.latency_ns() : 0; }
  uint32_t slots(Source s) const;
  // The lane's projection from its anchor, rebuilt (a new epoch) after a change.
  const QueueProjection& projection(Source s);
  Now projection_now(Source s);
  // Moves the lane's anchor to now: each operation keeps the bytes the model has it move.
  void sync_projection(Source s);
  void refresh_profile(const ClaimStaging& c);
  // The uncommitted claim's state-aware TTR from one source, and from all.
  TimeNs source_ttr(Source s, Profile& f);
  TimeNs planned_ttr(const ClaimStaging& c);
  // Bounds on planned_ttr(c) without placing its reads anew (kept per claim for the layouts
  // and the time): work conservation, and the last placement moved by at most how far the
  // slots moved since; exact where the kept work still holds.
  TtrRange source_ttr_range(Source s, Profile& f);
  TtrRange planned_ttr_range(const ClaimStaging& c);
  // An uncommitted layer-wise claim's lead TTR: every source's queue as it stands now with
  // the claim's reads after it, laid out afresh; each object's readiness in its group.
  TimeNs layered_ttr(const ClaimStaging& c);
  // p.place_after(reads, from); a single run (claims of equal chunks) is placed once per
  // projection epoch and `from`, then looked up.
  uint64_t place(Lane& l, const std::vector<ReadRun>& reads, uint64_t from);
  uint64_t drop_if_unreferenced(ObjectKey key, ObjRec& o);
  void forget_if_unused(ObjectKey key);

  Device& device_;
  const Clock& clock_;
  ProviderConfig config_;
  ProviderListener* listener_ = nullptr;
  CapacityLedger ledger_;
  RateEstimator rate_;
  LatencyRateEstimator remote_;
  std::unordered_map<ObjectKey, ObjRec> objects_;
  std::array<Lane, kSources> lanes_;
  uint64_t epoch_ = 0;  // bumped at each rebuild of a lane's projection
  uint64_t reserved_bytes_ = 0;
  ProviderStats counters_;
};

}  // namespace tempo
