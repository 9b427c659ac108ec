// Several threads report, revise, reorder, retrieve and cancel claims while staging runs on
// the uring device under a context's threaded driver; a checker thread verifies the
// accounting invariants on the loop thread throughout, and everything balances at the end. Runs
// under ThreadSanitizer (label "concurrent").
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "../uring/device_fixture.h"
#include "stack/context.h"
#include "store/checksum.h"

namespace tempo {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr ObjectKey kObjects = 64;

class ThreadedContextStressTest : public test::DeviceFixture {};

// The accounting as seen from the loop thread between events; in a healthy stack
// ledger == recount <= budget, and the device's pins are exactly the provider's.
struct Accounting {
  uint64_t ledger_bytes = 0;
  uint64_t recounted_ledger_bytes = 0;
  uint64_t budget_bytes = 0;
  uint64_t provider_pins = 0;
  uint64_t device_pins = 0;
};

Accounting accounting(Context& c) {
  Accounting a;
  c.call([&](Stack& s) {
    const ProviderStats ps = s.provider().stats();
    a = Accounting{ps.ledger_bytes, s.provider().recompute_ledger_bytes(), ps.budget_bytes,
                   s.provider().held_pins(), s.device().stats().pins};
  });
  return a;
}

TEST_F(ThreadedContextStressTest, ConcurrentClaimsKeepTheAccountingInvariants) {
  open_store();
  if (IsSkipped()) return;
  std::unordered_map<ObjectKey, uint64_t> sums;
  for (ObjectKey k = 0; k < kObjects; ++k) {
    put(k, 64 * kKiB + (k % 7) * 16 * kKiB);
    sums[k] = checksum64(test::object_bytes(k, sizes_[k]).data(), sizes_[k]);
  }
  open_device(options(8 * kMiB));
  StackConfig cfg;
  cfg.controller.policy = *parse_policy("tempo");
  cfg.provider.budget_bytes = 1 * kMiB;  // small enough that some claims go ordinary
  cfg.provider.calibration_rate_bps = 1e9;
  std::unique_ptr<Context> loop;
  std::string err;
  ASSERT_EQ(Context::create(*dev_, cfg, &loop, &err), 0) << err;

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> violations{0}, checks{0}, transfers{0}, ordinary{0}, cancelled{0},
      bad_bytes{0};
  std::thread checker([&] {
    while (!stop.load()) {
      const Accounting a = accounting(*loop);
      if (a.ledger_bytes != a.recounted_ledger_bytes || a.ledger_bytes > a.budget_bytes ||
          a.provider_pins != a.device_pins)
        ++violations;
      ++checks;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });

  auto client = [&](uint64_t seed) {
    std::mt19937_64 r(seed);
    for (int i = 0; i < 60; ++i) {
      Manifest m;
      const int n = 1 + static_cast<int>(r() % 4);
      const ObjectKey first = r() % kObjects;
      for (int j = 0; j < n; ++j) {
        const ObjectKey k = (first + j) % kObjects;  // prefix-like sharing across clients
        m.push_back(KvObject{k, sizes_[k]});
      }
      ClaimId id = 0;
      ASSERT_EQ(loop->call([&](Stack& s) {
        return s.report(m, static_cast<TimeNs>(r() % 40) * kNsPerMs, &id);
      }),
                0);
      if (r() % 3 == 0)
        loop->call(
            [&](Stack& s) { return s.revise(id, static_cast<TimeNs>(r() % 20) * kNsPerMs); });
      if (r() % 4 == 0) {
        const ClaimId order[] = {id, kNoClaim};
        loop->call([&](Stack& s) { return s.update_order(order); });
      }
      if (r() % 5 == 0) {
        if (loop->call([&](Stack& s) { return s.cancel(id); }) == 0) ++cancelled;
        continue;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(r() % 3000));
      RetrievalOutcome out{};
      ASSERT_EQ(loop->call([&](Stack& s) { return s.request_retrieval(id, &out); }), 0);
      if (out == RetrievalOutcome::kWait) {
        if (r() % 8 == 0) {
          // Cancelled while staging: protection is kept until staging ends, then freed.
          if (loop->call([&](Stack& s) { return s.cancel(id); }) == 0) ++cancelled;
          continue;
        }
        ASSERT_EQ(loop->wait_ready(id, 20 * kNsPerSec, &out), 0);
      }
      if (out == RetrievalOutcome::kOrdinary) {
        ASSERT_EQ(loop->ordinary_read(id), 0);
        ++ordinary;
        continue;
      }
      ASSERT_EQ(loop->call([&](Stack& s) { return s.begin_transfer(id); }), 0);
      std::vector<std::span<const std::byte>> ext;
      ASSERT_EQ(loop->call([&](Stack& s) { return s.extents(id, &ext); }), 0);
      // Copy out as a GPU transfer would, then check each object's bytes.
      std::vector<std::byte> buf;
      for (auto e : ext) buf.insert(buf.end(), e.begin(), e.end());
      uint64_t at = 0;
      for (const KvObject& o : m) {
        if (checksum64(buf.data() + at, o.bytes) != sums[o.key]) ++bad_bytes;
        at += o.bytes;
      }
      ASSERT_EQ(loop->call([&](Stack& s) { return s.end_transfer(id); }), 0);
      ++transfers;
    }
  };
  std::vector<std::thread> clients;
  for (uint64_t t = 0; t < 4; ++t) clients.emplace_back(client, 7 + t);
  for (auto& c : clients) c.join();
  // Cancelled-while-staging claims release once their staging ends.
  const TimeNs deadline = clock_.now() + 20 * kNsPerSec;
  while (loop->call([&](Stack& s) { return s.stats(); }).controller.live > 0 &&
         clock_.now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  stop = true;
  checker.join();

  std::printf("%llu transfers, %llu ordinary, %llu cancelled, %llu accounting checks\n",
              static_cast<unsigned long long>(transfers.load()),
              static_cast<unsigned long long>(ordinary.load()),
              static_cast<unsigned long long>(cancelled.load()),
              static_cast<unsigned long long>(checks.load()));
  EXPECT_EQ(violations.load(), 0u);
  EXPECT_GT(checks.load(), 0u);
  EXPECT_EQ(bad_bytes.load(), 0u);
  EXPECT_GT(transfers.load(), 0u);
  const ControllerStats cs = loop->call([&](Stack& s) { return s.stats(); }).controller;
  EXPECT_EQ(cs.live, 0u);
  EXPECT_EQ(cs.reported, 240u);
  EXPECT_EQ(cs.released + cs.cancelled + cs.ordinary + cs.failed, 240u);
  EXPECT_EQ(cs.released, transfers.load());
  EXPECT_EQ(cs.ordinary, ordinary.load());
  EXPECT_EQ(cs.failed, 0u);
  const Accounting a = accounting(*loop);
  EXPECT_EQ(a.ledger_bytes, 0u);
  EXPECT_EQ(a.recounted_ledger_bytes, 0u);
  EXPECT_EQ(a.provider_pins, 0u);
  EXPECT_EQ(a.device_pins, 0u);
  EXPECT_EQ(loop->call([&](Stack& s) { return s.stats(); }).provider.reserved_bytes, 0u);
  loop.reset();
  dev_->drop_unpinned();
  EXPECT_EQ(dev_->fast_tier_stats().space.used_bytes, 0u);
}

}  // namespace
}  // namespace tempo
