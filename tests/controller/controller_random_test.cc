// Thousands of random operation sequences against the controller, provider and sim device,
// with the accounting invariants checked after every operation.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <random>
#include <set>

#include "controller/controller.h"
#include "stack/sim_stack.h"

namespace tempo {
namespace {

constexpr ObjectKey kObjects = 48;

// reachable(from, to): `to` follows `from` through legal transitions (a claim may take
// several steps within one operation). Computed once from claim_transition_legal.
bool reachable(ClaimState from, ClaimState to) {
  constexpr int kStates = static_cast<int>(ClaimState::kFailed) + 1;
  static const auto table = [] {
    std::array<std::array<bool, kStates>, kStates> r{};
    for (int a = 0; a < kStates; ++a) {
      r[a][a] = true;
      for (int b = 0; b < kStates; ++b)
        r[a][b] = r[a][b] ||
                  claim_transition_legal(static_cast<ClaimState>(a), static_cast<ClaimState>(b));
    }
    for (int k = 0; k < kStates; ++k)  // transitive closure (Floyd-Warshall)
      for (int a = 0; a < kStates; ++a)
        for (int b = 0; b < kStates; ++b) r[a][b] = r[a][b] || (r[a][k] && r[k][b]);
    return r;
  }();
  return table[static_cast<int>(from)][static_cast<int>(to)];
}

class RandomRun {
 public:
  RandomRun(uint64_t seed) : rng_(seed) {
    static const char* kPolicies[] = {"demand",  "immediate",    "queue-1",
                                      "queue-4", "tempo-static", "tempo"};
    SimStackConfig c;
    c.device = SimDeviceConfig{6000,
                               2000.0 + static_cast<double>(pick(3000)),
                               1 + static_cast<uint32_t>(pick(4)),
                               pick(2) ? 0 : 5 * kNsPerMs,
                               300.0,
                               "lru"};
    c.provider = ProviderConfig{2000 + pick(2500), 2500.0, 2500.0, kNsPerSec, 0};
    c.controller = ControllerConfig{*parse_policy(kPolicies[pick(6)]), 50 * kNsPerMs};
    // Half the runs have a cluster pool beside the SSD, holding every third object, whose
    // behaviour differs from what it reports (the provider learns it).
    const bool pool = pick(2) == 0;
    if (pool) c.remote = SimRemote{random_pool(), random_pool()};
    rt_ = std::make_unique<SimStack>(c);
    if (pick(2)) {  // share groups 1 and 2 (claims of group 0 or 3 have none)
      ctl().set_share(1, 1 + static_cast<uint32_t>(pick(3)));
      ctl().set_share(2, 1 + static_cast<uint32_t>(pick(3)));
    }
    // Odd seeds: objects of any size; even seeds: of three sizes, so manifests read runs of
    // equal objects and claims read alike (the placement kept for alike claims).
    for (ObjectKey k = 1; k <= kObjects; ++k)
      sizes_[k] = seed % 2 ? 50 + pick(400) : 100 * (1 + pick(3));
    for (auto [k, b] : sizes_)
      rt_->device.add_object(k, b, pool && k % 3 == 0 ? Source::kRemote : Source::kLocal);
  }

  void step() {
    switch (pick(10)) {
      case 0:
      case 1:
        report();
        break;
      case 2:
        revise();
        break;
      case 3:
        order();
        break;
      case 4:
        retrieve();
        break;
      case 5:
        transfer();
        break;
      case 6:
        cancel();
        break;
      case 7:
        if (pick(8) == 0) rt_->device.inject_stage_error(1 + pick(kObjects), -EIO);
        if (pick(8) == 0)
          ctl().set_share(1 + static_cast<uint32_t>(pick(3)), static_cast<uint32_t>(pick(3)));
        break;
      default:
        rt_->driver.events().run_until(rt_->driver.now() +
                                       static_cast<TimeNs>(pick(300)) * kNsPerMs);
    }
    check();
  }

  // Ends every claim the way a runtime would, then checks nothing is left held.
  void drain() {
    for (int round = 0; round < 100; ++round) {
      bool live = false;
      for (ClaimId id : ids_) {
        const Claim* c = ctl().claim(id);
        if (c == nullptr) continue;  // erased: it ended
        RetrievalOutcome out{};
        if (c->state == ClaimState::kPlanned && ctl().cancel(id) == 0) check();
        if (c->state == ClaimState::kStageReady && ctl().request_retrieval(id, &out) == 0) check();
        if (c->state == ClaimState::kStageReady && ctl().begin_transfer(id) == 0) check();
        if (c->state == ClaimState::kTransferring && ctl().end_transfer(id) == 0) check();
        live = live || !claim_state_terminal(c->state);
      }
      rt_->driver.events().run_all(100000);
      check();
      if (!live) break;
    }
    for (ClaimId id : ids_) {
      const Claim* c = ctl().claim(id);
      ASSERT_TRUE(c == nullptr || claim_state_terminal(c->state)) << id;
    }
    EXPECT_EQ(rt_->stack.provider().ledger().bytes(), 0u);
    EXPECT_EQ(rt_->device.stats().pins, 0u);
    EXPECT_EQ(rt_->device.stats().pinned_bytes, 0u);
    EXPECT_EQ(rt_->stack.provider().held_pins(), 0u);
    EXPECT_EQ(ctl().stats().live, 0u);
  }

  ControllerStats stats() const { return rt_->stack.controller().stats(); }

 private:
  RemoteInfo random_pool() {
    return RemoteInfo{1 + static_cast<uint32_t>(pick(4)), 1000.0 + static_cast<double>(pick(3000)),
                      static_cast<TimeNs>(pick(20)) * kNsPerMs};
  }

 private:
  uint64_t pick(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  Controller& ctl() { return rt_->stack.controller(); }
  ClaimId any() { return ids_.empty() ? 12345 : ids_[pick(ids_.size())]; }

  void report() {
    Manifest m;
    const uint64_t n = 1 + pick(6);
    const ObjectKey start = 1 + pick(kObjects);
    for (uint64_t i = 0; i < n; ++i) {
      const ObjectKey k = 1 + (start + i * (1 + pick(3))) % kObjects;
      m.push_back({k, sizes_[k]});
    }
    ClaimId id = 0;
    ASSERT_EQ(ctl().report(m, static_cast<TimeNs>(pick(3000)) * kNsPerMs, &id, nullptr,
                           static_cast<uint32_t>(pick(4))),
              0);
    ids_.push_back(id);
    seen_[id] = ClaimState::kPlanned;
  }
  void revise() { ctl().revise(any(), static_cast<TimeNs>(pick(3000)) * kNsPerMs); }
  void order() {
    std::vector<ClaimId> o;
    for (ClaimId id : ids_) {
      const Claim* c = ctl().claim(id);
      if (c != nullptr && c->state == ClaimState::kPlanned) o.push_back(pick(5) ? id : kNoClaim);
    }
    std::shuffle(o.begin(), o.end(), rng_);
    ASSERT_EQ(ctl().update_order(o), 0);
  }
  void retrieve() {
    const ClaimId id = any();
    RetrievalOutcome out{};
    if (ctl().request_retrieval(id, &out) == 0 && out == RetrievalOutcome::kOrdinary &&
        !read_.contains(id)) {
      read_.insert(id);
      std::vector<ObjectKey> keys;
      for (auto [k, b] : sizes_)
        if (pick(4) == 0) keys.push_back(k);
      ASSERT_EQ(rt_->device.demand_read(keys, [](int st) { EXPECT_EQ(st, 0); }), 0);
    }
  }
  void transfer() {
    const ClaimId id = any();
    if (pick(2))
      ctl().begin_transfer(id);
    else
      ctl().end_transfer(id);
  }
  void cancel() { ctl().cancel(any()); }

  void check() {
    const Provider& p = rt_->stack.provider();
    ASSERT_EQ(p.ledger().bytes(), p.recompute_ledger_bytes());
    ASSERT_LE(p.ledger().bytes(), p.ledger().budget());
    const DeviceStats ds = rt_->device.stats();
    ASSERT_LE(ds.resident_bytes, rt_->device.info().capacity_bytes);
    ASSERT_EQ(ds.resident_bytes, rt_->device.recount_used_bytes());
    ASSERT_EQ(ds.pins, p.held_pins());
    uint64_t live = 0;
    for (ClaimId id : ids_) {
      const Claim* c = ctl().claim(id);
      if (c == nullptr) continue;  // ended and erased after its retention
      ASSERT_TRUE(reachable(seen_[id], c->state))
          << claim_state_name(seen_[id]) << " -> " << claim_state_name(c->state);
      seen_[id] = c->state;
      live += claim_state_terminal(c->state) ? 0 : 1;
      if (c->state == ClaimState::kStageReady || c->state == ClaimState::kTransferring) {
        ASSERT_TRUE(c->staging.ready());
      }
      if (c->state == ClaimState::kPlanned) check_ttr(*c);
    }
    ASSERT_EQ(ctl().stats().live, live);
    // Each share group's live claims and protected bytes, recounted from its claims.
    for (const auto& [group, use] : ctl().shares()) {
      uint64_t g_live = 0, g_bytes = 0;
      ctl().for_each_claim([&](const Claim& c) {
        if (c.group != group) return;
        g_live += claim_state_terminal(c.state) ? 0 : 1;
        if (c.state == ClaimState::kStaging || c.state == ClaimState::kStageReady ||
            c.state == ClaimState::kTransferring)
          g_bytes += c.bytes;
      });
      ASSERT_EQ(use.live, g_live) << "group " << group;
      ASSERT_EQ(use.protected_bytes, g_bytes) << "group " << group;
      ASSERT_TRUE(use.weight > 0 || use.live > 0 || use.protected_bytes > 0) << group;
    }
    // Timeliness counts retrievals of committed claims; every commit has its margin.
    const ControllerStats s = ctl().stats();
    ASSERT_LE(s.on_time + s.late, s.committed);
    uint64_t margins = 0;
    for (uint64_t n : s.margin_buckets) margins += n;
    ASSERT_EQ(margins, s.committed);
    // Only ended claims are erased, and no more of them are kept than the retention allows.
    ASSERT_LE(ctl().held_claims(), live + ctl().config().retain_claims);
  }

  // The kept TTR against the reference recomputation, and the commit decision the pass
  // takes from it (laxity <= 0) at the claim's TTU and around the TTR itself.
  void check_ttr(const Claim& c) {
    Provider& p = rt_->stack.provider();
    const std::optional<TimeNs> ref = p.reference_ttr(c.staging);
    ASSERT_TRUE(ref.has_value());
    ASSERT_EQ(p.ttr(c.staging, TtrMode::kStateAware), ref) << "claim " << c.id;
    const TimeNs ttu = c.ttu - (rt_->driver.now() - c.ttu_at);
    for (TimeNs threshold : {ttu, *ref - 1, *ref, *ref + 1})
      ASSERT_EQ(p.ttr_at_least(c.staging, threshold, TtrMode::kStateAware), *ref >= threshold)
          << "claim " << c.id << " threshold " << threshold;
    ++ttr_checks_;
  }

 public:
  uint64_t ttr_checks() const { return ttr_checks_; }

 private:
  uint64_t ttr_checks_ = 0;
  std::mt19937_64 rng_;
  std::unique_ptr<SimStack> rt_;
  std::map<ObjectKey, uint64_t> sizes_;
  std::vector<ClaimId> ids_;
  std::map<ClaimId, ClaimState> seen_;
  std::set<ClaimId> read_;
};

TEST(ControllerRandom, InvariantsHoldAfterEveryOperation) {
  ControllerStats total;
  uint64_t ttr_checks = 0;
  for (uint64_t seed = 1; seed <= 2000; ++seed) {
    RandomRun run(seed);
    for (int i = 0; i < 150; ++i) {
      run.step();
      if (::testing::Test::HasFatalFailure()) FAIL() << "seed " << seed << " op " << i;
    }
    run.drain();
    if (::testing::Test::HasFailure()) FAIL() << "seed " << seed;
    const ControllerStats s = run.stats();
    total.committed += s.committed;
    total.capacity_deferrals += s.capacity_deferrals;
    total.ordinary += s.ordinary;
    total.failovers += s.failovers;
    total.cancelled += s.cancelled;
    total.released += s.released;
    ttr_checks += run.ttr_checks();
  }
  EXPECT_GT(ttr_checks, 100000u);
  // The sequences reach every outcome the invariants are meant to hold through.
  EXPECT_GT(total.committed, 10000u);
  EXPECT_GT(total.capacity_deferrals, 1000u);
  EXPECT_GT(total.ordinary, 1000u);
  EXPECT_GT(total.failovers, 50u);
  EXPECT_GT(total.cancelled, 1000u);
  EXPECT_GT(total.released, 1000u);
}

}  // namespace
}  // namespace tempo
