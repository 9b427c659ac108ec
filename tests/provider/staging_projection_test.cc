#include "provider/staging_projection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace tempo {
namespace {

// Each operation's completion in ns at `rate`.
std::vector<TimeNs> completions(const QueueProjection& p, double rate) {
  std::vector<TimeNs> out;
  for (size_t i = 0; i < p.size(); ++i) out.push_back(bytes_to_ns(p.work_at(p.finish(i)), rate));
  return out;
}

QueueProjection built(std::vector<uint64_t> remaining, uint32_t slots) {
  QueueProjection p;
  p.build(remaining, slots);
  return p;
}

TEST(StagingProjection, ConcurrentOperationsShareTheRate) {
  // Both at 500 B/s until the first ends at 1 s; the second then has 500 B at 1000 B/s.
  EXPECT_EQ(completions(built({500, 1000}, 2), 1000),
            (std::vector<TimeNs>{kNsPerSec, 1500 * kNsPerMs}));
}

TEST(StagingProjection, OneSlotServesInIssueOrder) {
  EXPECT_EQ(completions(built({500, 1000}, 1), 1000),
            (std::vector<TimeNs>{500 * kNsPerMs, 1500 * kNsPerMs}));
}

TEST(StagingProjection, QueuedOperationsStartWhenASlotFrees) {
  EXPECT_EQ(completions(built({500, 500, 500}, 2), 1000),
            (std::vector<TimeNs>{kNsPerSec, kNsPerSec, 1500 * kNsPerMs}));
}

TEST(StagingProjection, DoneOperationsCompleteNow) {
  EXPECT_EQ(completions(built({0, 300}, 1), 1000), (std::vector<TimeNs>{0, 300 * kNsPerMs}));
}

TEST(StagingProjection, TheTagForAnAmountOfWorkInvertsTheWork) {
  const QueueProjection p = built({500, 1000, 200}, 2);
  // 0-1 s: ops 0 and 1 at 500 B/s (op 0 done at tag 500); 1-1.2 s: ops 1 and 2.
  EXPECT_EQ(p.tag_for_work(1200), 600u);
  EXPECT_EQ(p.work_at(600), 1200u);
  EXPECT_EQ(p.work_at(600) - p.work_at(500), 200u);
  EXPECT_EQ(p.tag_for_work(1201), 600u);  // the largest tag not past the work
  EXPECT_EQ(p.tag_for_work(1700), p.last());
  EXPECT_EQ(p.last(), 1000u);
  EXPECT_EQ(p.total(), 1700u);
}

TEST(StagingProjection, ReadsPlacedAfterTheQueueTakeTheSlotsThatFreeFirst) {
  const QueueProjection p = built({500, 1000}, 2);
  EXPECT_EQ(p.first_free(), 500u);
  const ReadRun reads[] = {{300, 2}};
  // The first read takes slot 0 at 500 (ends 800), the second slot 0 again at 800 (the
  // other slot frees at 1000): 1100.
  EXPECT_EQ(p.place_after(reads, 0), 1100u);
  // Not before tag 900: both at 900 and 1000.
  EXPECT_EQ(p.place_after(reads, 900), 1300u);
  EXPECT_EQ(p.place_after({}, 700), 700u);
}

// What the pass bounds a kept placement by: reads placed after another queue end within
// the distance between the two queues' slots (and exactly as far apart for a shift).
TEST(StagingProjection, ReadsMoveByAtMostTheDistanceTheSlotsMoved) {
  const QueueProjection a = built({500, 1000}, 2);
  const QueueProjection b = built({700, 1000}, 2);
  std::vector<uint64_t> basis;
  a.slots_from(0, &basis);
  EXPECT_EQ(basis, (std::vector<uint64_t>{500, 1000}));
  EXPECT_EQ(b.distance(basis, 0), 200u);
  EXPECT_EQ(b.distance(basis, 900), 400u);  // slots {900, 1000}
  EXPECT_EQ(built({1}, 3).distance(basis, 0), UINT64_MAX);
  std::mt19937_64 rng(9);
  for (int run = 0; run < 2000; ++run) {
    const auto slots = static_cast<uint32_t>(1 + rng() % 8);
    std::vector<uint64_t> q1(rng() % 12), q2(rng() % 12);
    for (uint64_t& q : q1) q = rng() % 1000;
    for (uint64_t& q : q2) q = rng() % 1000;
    std::vector<ReadRun> reads(1 + rng() % 10);
    for (ReadRun& r : reads) r = {1 + rng() % 500, 1 + rng() % 3};
    const QueueProjection p1 = built(q1, slots);
    const QueueProjection p2 = built(q2, slots);
    const uint64_t from = rng() % 2 ? 0 : rng() % 1500;
    p1.slots_from(from, &basis);
    const uint64_t d = p2.distance(basis, from);
    const uint64_t e1 = p1.place_after(reads, from), e2 = p2.place_after(reads, from);
    EXPECT_LE(e1 > e2 ? e1 - e2 : e2 - e1, d) << "run " << run;
  }
}

TEST(StagingProjection, PlacingRunsOfEqualReadsMatchesOneReadAtATime) {
  std::mt19937_64 rng(5);
  for (int run = 0; run < 4000; ++run) {
    const auto slots = static_cast<uint32_t>(1 + rng() % 8);
    std::vector<uint64_t> queue(rng() % 12);
    std::vector<ReadRun> reads(rng() % 10);
    for (uint64_t& q : queue) q = rng() % 1000;
    // Half the queues: reads of three sizes in short runs; the others: reads of any size,
    // single or in runs longer than the slots.
    for (ReadRun& r : reads)
      r = run % 2 ? ReadRun{1 + rng() % 3 * 250, rng() % 6}
                  : ReadRun{1 + rng() % 1000, rng() % 3 ? 1 : rng() % 40};
    const QueueProjection p = built(queue, slots);
    const uint64_t from = rng() % 2000;
    // One read at a time, each into the slot that frees first, found by a scan.
    std::vector<uint64_t> slot(slots, 0);
    for (uint64_t q : queue) *std::min_element(slot.begin(), slot.end()) += q;
    uint64_t end = from;
    for (uint64_t& f : slot) f = std::max(f, from);
    for (const ReadRun& r : reads)
      for (uint64_t n = 0; n < r.count; ++n) {
        uint64_t& f = *std::min_element(slot.begin(), slot.end());
        f += r.bytes;
        end = std::max(end, f);
      }
    ASSERT_EQ(p.place_after(reads, from), end) << "run " << run;
  }
}

// The processor-sharing model run step by step in floating point (as the projection was
// first written): the tags and work of the list schedule give the same completions.
std::vector<double> stepwise(std::vector<double> rem, uint32_t slots, double rate) {
  std::vector<double> done(rem.size(), 0);
  std::vector<size_t> active;
  size_t next = 0;
  double t = 0;
  auto admit = [&] {
    for (; active.size() < slots && next < rem.size(); ++next)
      if (rem[next] > 0)
        active.push_back(next);
      else
        done[next] = t;
  };
  admit();
  while (!active.empty()) {
    const double share = rate / static_cast<double>(active.size());
    double least = rem[active.front()];
    for (size_t i : active) least = std::min(least, rem[i]);
    t += least / share;
    for (size_t i : active) rem[i] = rem[i] <= least * (1 + 1e-12) ? 0 : rem[i] - least;
    std::erase_if(active, [&](size_t i) {
      if (rem[i] > 0) return false;
      done[i] = t;
      return true;
    });
    admit();
  }
  return done;
}

TEST(StagingProjection, AgreesWithTheStepwiseProcessorSharingModel) {
  std::mt19937_64 rng(11);
  for (int run = 0; run < 500; ++run) {
    const auto slots = static_cast<uint32_t>(1 + rng() % 6);
    std::vector<uint64_t> rem(rng() % 20);
    for (uint64_t& r : rem) r = rng() % 4 == 0 ? 0 : 1 + rng() % 100'000;
    const QueueProjection p = built(rem, slots);
    const std::vector<double> ref =
        stepwise(std::vector<double>(rem.begin(), rem.end()), slots, 1e6);
    for (size_t i = 0; i < rem.size(); ++i)
      EXPECT_NEAR(static_cast<double>(bytes_to_ns(p.work_at(p.finish(i)), 1e6)), ref[i] * 1e9, 2)
          << "run " << run << " op " << i;
  }
}

}  // namespace
}  // namespace tempo
