// The tiered KV placement layer: fixed-size blocks in GPU HBM, CPU DRAM and SSD, one
// eviction policy instance per tier, and the placement paper's Algorithm 1:
//   - a read of a block in HBM is a hit; in DRAM or SSD the block is fetched up (DRAM ->
//     HBM over PCIe; SSD -> host -> HBM over the SSD link then PCIe) and promoted to HBM;
//     a block in no tier is recomputed and written to HBM;
//   - to make room, the lowest-ranked HBM block is demoted to DRAM, DRAM's to SSD, and
//     SSD's is dropped (its KV must be recomputed when next needed);
//   - a tier of capacity 0 is skipped: blocks demote past it, and a read from a lower
//     tier with no HBM streams the block to the GPU without promoting it (FlexGen-style).
// Every migration is charged in bytes to its link. Policies see an access-sequence clock
// (one tick per block reference), so gap-based predictors are independent of timing.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/time.h"
#include "placement/link.h"
#include "policies/study_policies.h"

namespace tempo::placement {

enum class Tier : uint8_t { kHbm = 0, kDram = 1, kSsd = 2, kNone = 3 };
inline constexpr int kNumTiers = 3;
const char* tier_name(Tier t);

struct TierShape {
  uint64_t hbm_blocks = 0;
  uint64_t dram_blocks = 0;
  uint64_t ssd_blocks = 0;
  uint64_t total() const { return hbm_blocks + dram_blocks + ssd_blocks; }
};

struct TieredCacheConfig {
  TierShape shape;
  uint64_t block_bytes = 0;
  std::string policy = "lru";
  PolicyOptions policy_options;  // capacity_entries is set per tier
  LinkSpec pcie_up;              // DRAM -> HBM (and the host hop of SSD -> HBM)
  LinkSpec pcie_down;            // HBM -> DRAM
  LinkSpec ssd;                  // SSD reads and writes share it
  // Demand fetches overtake prefetches queued on PCIe (host to GPU) and on the SSD link
  // that have not started, and the SSD writes of the demotions prefetches caused.
  bool demand_priority = false;
};

// Where a read was served from.
enum class Source : uint8_t { kHbm, kDram, kSsd, kRecompute };

struct ReadResult {
  Source source = Source::kHbm;  // where the block was when read (a prefetched one: kHbm)
  TimeNs ready = 0;              // when the block is usable on the GPU
  Tier waited_on = Tier::kHbm;   // the tier whose transfer `ready` waits for
  bool was_prefetched = false;   // it was (or is being) brought up by a prefetch
};

struct LinkBytes {
  uint64_t pcie_up = 0, pcie_down = 0, ssd_read = 0, ssd_write = 0;
  uint64_t total() const { return pcie_up + pcie_down + ssd_read + ssd_write; }
};

struct CacheCounters {
  std::array<uint64_t, 4> reads_by_source{};  // indexed by Source
  uint64_t writes = 0;                        // blocks created (prefill / decode output)
  uint64_t write_hits = 0;                    // writes of a block already in some tier
  uint64_t promotions = 0, demotions = 0, drops = 0;
  LinkBytes demand;    // bytes moved by demand reads and the demotions they caused
  LinkBytes prefetch;  // bytes moved by prefetches and the demotions they caused
  uint64_t prefetches = 0, prefetch_hits = 0, prefetch_wasted = 0;
  uint64_t prefetches_overtaken = 0;  // prefetch transfers a demand fetch went ahead of
};

class TieredCache {
 public:
  // Throws std::invalid_argument on an invalid configuration (unknown policy, zero block
  // size or link rate, no tier with capacity).
  explicit TieredCache(const TieredCacheConfig& config);

  // A demand read of `b` at time `now` (Algorithm 1).
  ReadResult read(BlockId b, TimeNs now);
  // `b` was just computed on the GPU (prefill or decode output): it is written to HBM.
  void write(BlockId b, TimeNs now);
  // Brings `b` up to `to` ahead of use. False (nothing moved) when it is already there
  // or higher, or when `to` has no capacity.
  bool prefetch(BlockId b, Tier to, TimeNs now);

  // Sizes the block table for ids below `n` up front (optional; it grows on demand).
  void reserve_blocks(uint64_t n) { blocks_.resize(std::max<uint64_t>(n, blocks_.size())); }
  Tier where(BlockId b) const { return b < blocks_.size() ? blocks_[b].tier : Tier::kNone; }
  // Whether promoting into `t` would first evict, and which block it would evict.
  std::optional<BlockId> next_victim(Tier t);
  bool full(Tier t) const;
  uint64_t occupancy(Tier t) const { return count_[static_cast<int>(t)]; }
  uint64_t capacity(Tier t) const { return cap_[static_cast<int>(t)]; }
  // When `b` (resident) becomes usable in its tier (a prefetch may still be moving it).
  TimeNs ready_at(BlockId b) const { return blocks_[b].ready_at; }
  TimeNs transfer_time(BlockId b, Tier to, TimeNs now) const;
  // An upper bound on transfer_time(b, to, now) over every resident block and tier.
  TimeNs max_transfer_time(TimeNs now) const;

  const CacheCounters& counters() const { return counters_; }
  const Link& link_pcie_up() const { return pcie_up_; }
  const Link& link_ssd() const { return ssd_; }
  const TieredCacheConfig& config() const { return config_; }
  uint64_t block_bytes() const { return config_.block_bytes; }
  // The access-sequence clock the policies see (one tick per read or write).
  TimeNs policy_clock() const { return tick_; }

 private:
  struct Block {
    Tier tier = Tier::kNone;
    bool prefetched = false;       // arrived by prefetch and not read since
    Tier came_from = Tier::kNone;  // the tier a prefetch moved it from
    TimeNs ready_at = 0;
    AccessHistory history;
  };
  Block& block(BlockId b);
  void set_ready(Block& s, TimeNs t) {
    s.ready_at = t;
    latest_ready_ = std::max(latest_ready_, t);
  }
  void touch_history(Block& s);
  Tier lower_tier(Tier t) const;
  // Frees one slot in `t` for `incoming` by demoting its victim; `lb` is charged for the
  // moves.
  void make_room(Tier t, BlockId incoming, TimeNs now, LinkBytes& lb);
  void place(BlockId b, Tier t, TimeNs now, LinkBytes& lb);
  void unplace(BlockId b);
  // A demand transfer on `link`; moves the blocks whose prefetches it overtook.
  TimeNs demand_transfer(Link& link, uint64_t bytes, TimeNs ready);
  static constexpr uint64_t kNoBlock = UINT64_MAX;  // the tag of a speculative write
  Tier top_tier() const;
  EvictionPolicy& policy(Tier t) { return *policies_[static_cast<int>(t)]; }

  TieredCacheConfig config_;
  std::array<uint64_t, kNumTiers> cap_{};
  std::array<uint64_t, kNumTiers> count_{};
  std::array<std::unique_ptr<EvictionPolicy>, kNumTiers> policies_;
  Link pcie_up_, pcie_down_, ssd_;
  std::vector<Block> blocks_;
  std::vector<MovedTransfer> moved_;  // scratch for transfer_demand
  TimeNs tick_ = 0;
  TimeNs latest_ready_ = 0;  // the latest ready_at ever set: bounds every block's
  CacheCounters counters_;
};

}  // namespace tempo::placement
