#include "placement/tiered_cache.h"

#include <gtest/gtest.h>

#include "placement/link.h"

namespace tempo::placement {
namespace {

TEST(Link, TransfersQueueInIssueOrder) {
  Link l({1e9, 100});  // 1 byte/ns + 100 ns
  EXPECT_EQ(l.duration(1000), 1100);
  EXPECT_EQ(l.transfer(1000, 0), 1100);
  EXPECT_EQ(l.transfer(1000, 0), 2200);     // waits for the first
  EXPECT_EQ(l.transfer(1000, 5000), 6100);  // idle link: starts when ready
  EXPECT_EQ(l.bytes(), 3000u);
  EXPECT_EQ(l.busy_time(), 3300);
}

TEST(Link, DemandOvertakesQueuedSpeculativeTransfers) {
  Link l({1e9, 0}, /*demand_priority=*/true);           // 1000 ns per 1000 bytes
  EXPECT_EQ(l.transfer_speculative(1000, 0, 7), 1000);  // runs 0-1000
  EXPECT_EQ(l.transfer_speculative(1000, 0, 8), 2000);  // queued: 1000-2000
  EXPECT_EQ(l.transfer_speculative(1000, 0, 9), 3000);  // queued: 2000-3000
  std::vector<MovedTransfer> moved;
  // At 500 the first is running; the demand goes next, ahead of 8 and 9.
  EXPECT_EQ(l.transfer_demand(1000, 500, &moved), 2000);
  ASSERT_EQ(moved.size(), 2u);
  EXPECT_EQ(moved[0].tag, 8u);
  EXPECT_EQ(moved[0].old_end, 2000);
  EXPECT_EQ(moved[0].new_end, 3000);
  EXPECT_EQ(moved[1].tag, 9u);
  EXPECT_EQ(moved[1].new_end, 4000);
  EXPECT_EQ(l.busy_until(), 4000);
  // FIFO links (the default) never reorder.
  Link f({1e9, 0});
  f.transfer_speculative(1000, 0, 7);
  f.transfer_speculative(1000, 0, 8);
  moved.clear();
  EXPECT_EQ(f.transfer_demand(1000, 500, &moved), 3000);
  EXPECT_TRUE(moved.empty());
}

TEST(TieredCache, DemandPriorityDelaysTheOvertakenPrefetch) {
  TieredCacheConfig c;
  c.shape = {4, 4, 0};
  c.block_bytes = 1000;
  c.pcie_up = {1e9, 0};
  c.pcie_down = {1e9, 0};
  c.ssd = {1e9, 0};
  c.demand_priority = true;
  TieredCache cache(c);
  for (BlockId b = 1; b <= 8; ++b) cache.write(b, 0);  // HBM {5..8}, DRAM {1..4}
  ASSERT_TRUE(cache.prefetch(1, Tier::kHbm, 10'000));  // 10'000-11'000
  ASSERT_TRUE(cache.prefetch(2, Tier::kHbm, 10'000));  // queued 11'000-12'000
  EXPECT_EQ(cache.read(3, 10'500).ready, 12'000);      // goes ahead of block 2
  EXPECT_EQ(cache.ready_at(2), 13'000);
  EXPECT_EQ(cache.ready_at(1), 11'000);
  EXPECT_EQ(cache.counters().prefetches_overtaken, 1u);
}

TieredCacheConfig small(TierShape shape, const std::string& policy = "lru") {
  TieredCacheConfig c;
  c.shape = shape;
  c.block_bytes = 1000;
  c.policy = policy;
  c.pcie_up = {1e9, 0};  // 1000 ns per block
  c.pcie_down = {1e9, 0};
  c.ssd = {0.25e9, 0};  // 4000 ns per block
  return c;
}

TEST(TieredCache, Algorithm1DemotesDownTheHierarchy) {
  TieredCache c(small({1, 1, 1}));
  c.write(1, 0);
  c.write(2, 0);  // 1 -> DRAM
  c.write(3, 0);  // 2 -> DRAM, 1 -> SSD
  EXPECT_EQ(c.where(3), Tier::kHbm);
  EXPECT_EQ(c.where(2), Tier::kDram);
  EXPECT_EQ(c.where(1), Tier::kSsd);
  c.write(4, 0);  // 3 -> DRAM, 2 -> SSD, 1 dropped
  EXPECT_EQ(c.where(1), Tier::kNone);
  EXPECT_EQ(c.counters().demotions, 5u);
  EXPECT_EQ(c.counters().drops, 1u);
  EXPECT_EQ(c.counters().demand.pcie_down, 3000u);
  EXPECT_EQ(c.counters().demand.ssd_write, 2000u);
}

TEST(TieredCache, ReadsPromoteAndChargeTheLinks) {
  TieredCache c(small({1, 1, 1}));
  c.write(1, 0);
  c.write(2, 0);
  c.write(3, 0);  // HBM {3}, DRAM {2}, SSD {1}
  const ReadResult d = c.read(2, 10'000);
  EXPECT_EQ(d.source, Source::kDram);
  EXPECT_EQ(d.waited_on, Tier::kDram);
  EXPECT_EQ(d.ready, 11'000);  // one PCIe block
  EXPECT_EQ(c.where(2), Tier::kHbm);
  EXPECT_EQ(c.where(3), Tier::kDram);  // swapped down
  const ReadResult s = c.read(1, 20'000);
  EXPECT_EQ(s.source, Source::kSsd);
  EXPECT_EQ(s.ready, 25'000);  // 4000 ns SSD + 1000 ns PCIe
  EXPECT_EQ(c.where(1), Tier::kHbm);
  EXPECT_EQ(c.where(2), Tier::kDram);
  EXPECT_EQ(c.where(3), Tier::kSsd);
  const ReadResult h = c.read(1, 30'000);
  EXPECT_EQ(h.source, Source::kHbm);
  EXPECT_EQ(h.ready, 30'000);
  const ReadResult m = c.read(9, 30'000);
  EXPECT_EQ(m.source, Source::kRecompute);
  EXPECT_EQ(c.counters().reads_by_source[0], 1u);
  EXPECT_EQ(c.counters().reads_by_source[1], 1u);
  EXPECT_EQ(c.counters().reads_by_source[2], 1u);
  EXPECT_EQ(c.counters().reads_by_source[3], 1u);
  EXPECT_EQ(c.counters().demand.pcie_up, 2000u);
  EXPECT_EQ(c.counters().demand.ssd_read, 1000u);
}

TEST(TieredCache, HbmOnlyDropsAndRecomputes) {
  TieredCache c(small({2, 0, 0}));
  c.write(1, 0);
  c.write(2, 0);
  c.write(3, 0);
  EXPECT_EQ(c.where(1), Tier::kNone);
  EXPECT_EQ(c.read(1, 0).source, Source::kRecompute);
  EXPECT_EQ(c.counters().demand.total(), 0u);
}

TEST(TieredCache, NoHbmStreamsFromDram) {
  TieredCache c(small({0, 4, 0}));
  c.write(1, 0);  // written down to DRAM over PCIe
  EXPECT_EQ(c.where(1), Tier::kDram);
  const ReadResult r = c.read(1, 5000);
  EXPECT_EQ(r.source, Source::kDram);
  EXPECT_EQ(r.ready, 6000);
  EXPECT_EQ(c.where(1), Tier::kDram);  // streamed, not promoted
  EXPECT_EQ(c.counters().demand.pcie_up, 1000u);
  EXPECT_EQ(c.counters().demand.pcie_down, 1000u);
}

TEST(TieredCache, DemandPriorityAppliesToTheSsdLinkToo) {
  // HBM 4, no DRAM, SSD 4; every transfer takes 1000 ns. Blocks 1-4 are demoted to SSD.
  for (bool priority : {false, true}) {
    TieredCacheConfig c;
    c.shape = {4, 0, 4};
    c.block_bytes = 1000;
    c.pcie_up = c.pcie_down = c.ssd = {1e9, 0};
    c.demand_priority = priority;
    TieredCache cache(c);
    for (BlockId b = 1; b <= 8; ++b) cache.write(b, 0);  // HBM {5..8}, SSD {1..4}
    // Each prefetch: SSD read, PCIe, and the SSD write of the HBM block it demotes. SSD:
    // read 1 10-11k, write 11-12k, read 2 12-13k, write 13-14k; PCIe: 1 11-12k, 2 13-14k.
    ASSERT_TRUE(cache.prefetch(1, Tier::kHbm, 10'000));
    ASSERT_TRUE(cache.prefetch(2, Tier::kHbm, 10'000));
    EXPECT_EQ(cache.ready_at(2), 14'000);
    const ReadResult r = cache.read(3, 10'500);
    if (!priority) {
      // FIFO: behind all four (SSD 14-15k), then PCIe 15-16k.
      EXPECT_EQ(r.ready, 16'000);
      EXPECT_EQ(cache.counters().prefetches_overtaken, 0u);
      continue;
    }
    // Demand first: SSD 11-12k (read 1 had started), PCIe 12-13k ahead of nothing that
    // had not started. Read 2 moves back twice on SSD, behind the demand read and behind
    // the demand's own demotion write (12-13k): 14-15k, then its PCIe hop: ready 16k.
    EXPECT_EQ(r.ready, 13'000);
    EXPECT_EQ(cache.ready_at(1), 12'000);
    EXPECT_EQ(cache.ready_at(2), 16'000);
    EXPECT_EQ(cache.counters().prefetches_overtaken, 2u);
  }
}

TEST(TieredCache, PrefetchSharesTheLinkWithDemand) {
  TieredCache c(small({2, 2, 0}));
  for (BlockId b = 1; b <= 4; ++b) c.write(b, 0);    // HBM {3,4}, DRAM {1,2}
  ASSERT_TRUE(c.prefetch(1, Tier::kHbm, 100'000));   // PCIe busy until 101'000
  EXPECT_FALSE(c.prefetch(1, Tier::kHbm, 100'000));  // already there
  const ReadResult r = c.read(2, 100'000);           // demand queues behind it
  EXPECT_EQ(r.ready, 102'000);
  const ReadResult p = c.read(1, 100'500);  // still in flight: waits on DRAM's transfer
  EXPECT_TRUE(p.was_prefetched);
  EXPECT_EQ(p.source, Source::kHbm);
  EXPECT_EQ(p.waited_on, Tier::kDram);
  EXPECT_EQ(p.ready, 101'000);
  EXPECT_EQ(c.counters().prefetch.pcie_up, 1000u);
  EXPECT_EQ(c.counters().prefetch_hits, 1u);
}

TEST(TieredCache, PolicyDecidesTheDemotion) {
  // Block 1 is read three times, 2 once: reuse-frequency demotes 2, lru demotes 1.
  for (const char* policy : {"lru", "reuse-frequency"}) {
    TieredCache c(small({2, 2, 0}, policy));
    c.write(1, 0);
    c.read(1, 0);
    c.read(1, 0);
    c.write(2, 0);
    c.write(3, 0);
    EXPECT_EQ(c.where(std::string(policy) == "lru" ? 1 : 2), Tier::kDram) << policy;
  }
}

TEST(TieredCache, RejectsBadConfigs) {
  EXPECT_THROW(TieredCache(small({0, 0, 0})), std::invalid_argument);
  EXPECT_THROW(TieredCache(small({1, 1, 1}, "nope")), std::invalid_argument);
  auto c = small({1, 1, 1});
  c.block_bytes = 0;
  EXPECT_THROW(TieredCache{c}, std::invalid_argument);
  c = small({1, 1, 1});
  c.ssd.bytes_per_sec = 0;
  EXPECT_THROW(TieredCache{c}, std::invalid_argument);
}

}  // namespace
}  // namespace tempo::placement
