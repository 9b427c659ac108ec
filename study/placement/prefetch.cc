#include "placement/prefetch.h"

#include <algorithm>
#include <iterator>
#include <unordered_map>

namespace tempo::placement {

bool KnownList::contains(uint64_t pos) const {
  auto it = std::upper_bound(spans_.begin(), spans_.end(), pos,
                             [](uint64_t p, const KnownSpan& s) { return p < s.begin; });
  return it != spans_.begin() && pos < std::prev(it)->end;
}

namespace {

bool movable(const TieredCache& c, BlockId b) {
  const Tier t = c.where(b);
  return t == Tier::kDram || t == Tier::kSsd;
}

class NoPrefetch final : public Prefetcher {
 public:
  std::string_view name() const override { return "none"; }
  bool plans() const override { return false; }
  void plan(PrefetchView& /*v*/) override {}
};

class CausalPrefetch final : public Prefetcher {
 public:
  explicit CausalPrefetch(uint32_t depth) : depth_(depth) {}
  std::string_view name() const override { return "causal"; }
  void on_read(BlockId b) override {
    if (has_last_ && last_ != b) successor_[last_] = b;
    if (new_run_) {
      if (has_last_) exit_[last_] = b;  // the run that ended at last_ was followed by b
      run_start_ = b;
      new_run_ = false;
    }
    read_in_run_[b] = run_;
    last_ = b;
    has_last_ = true;
  }
  // Predicts the next run from past accesses only. If a run has ended at this run's last
  // block before, the next one starts where that one's successor did: walk the successor
  // chain from there over blocks this run has not read (the next unread run). Otherwise,
  // if runs repeat (dense attention rereads a sequence from its start each decode pass),
  // predict that this run starts over - while that guess keeps coming true: at least half
  // of the blocks it named at the previous decision point were read since (checked at
  // every decision point, whether or not the guess was acted on).
  void plan(PrefetchView& v) override {
    if (!has_last_) return;
    if (!repeat_guess_.empty()) {
      size_t confirmed = 0;
      for (BlockId b : repeat_guess_) confirmed += read_in_run_[b] == run_ ? 1 : 0;
      repeats_ = 2 * confirmed >= repeat_guess_.size();
    }
    repeat_guess_ = chain(run_start_, false);
    const auto exit = exit_.find(last_);
    if (exit != exit_.end()) {
      fetch(v, chain(exit->second, true));
    } else if (repeats_) {
      fetch(v, repeat_guess_);
    }
    ++run_;
    new_run_ = true;
  }

 private:
  // `depth` steps along the successor chain from `b`, up to where it closes; with
  // `unread`, blocks this run read are passed over (they are not next).
  std::vector<BlockId> chain(BlockId b, bool unread) {
    std::vector<BlockId> out;
    const BlockId start = b;
    for (uint32_t i = 0; i < depth_; ++i) {
      if (!unread || read_in_run_[b] != run_) out.push_back(b);
      auto it = successor_.find(b);
      if (it == successor_.end() || it->second == start) break;
      b = it->second;
    }
    return out;
  }
  static void fetch(PrefetchView& v, const std::vector<BlockId>& blocks) {
    for (BlockId b : blocks) {
      if (movable(v.cache, b)) v.cache.prefetch(b, Tier::kHbm, v.now);
    }
  }

  uint32_t depth_;
  bool has_last_ = false;
  bool new_run_ = true;
  bool repeats_ = true;  // the last restart guess came true (optimistic at first)
  BlockId last_ = 0;
  BlockId run_start_ = 0;
  uint64_t run_ = 1;  // runs are numbered from 1; read_in_run_ 0 = never read
  std::unordered_map<BlockId, BlockId> successor_;
  std::unordered_map<BlockId, BlockId> exit_;
  std::unordered_map<BlockId, uint64_t> read_in_run_;  // the latest run that read each block
  std::vector<BlockId> repeat_guess_;                  // the restart the last plan() guessed
};

class OraclePrefetch final : public Prefetcher {
 public:
  explicit OraclePrefetch(uint32_t depth) : depth_(depth) {}
  std::string_view name() const override { return "oracle"; }
  void plan(PrefetchView& v) override {
    const uint64_t end = std::min<uint64_t>(v.stream.size(), v.pos + depth_);
    for (uint64_t p = v.pos; p < end; ++p) {
      const Access& a = v.stream[p];
      if (a.kind != AccessKind::kWrite && movable(v.cache, a.block)) {
        v.cache.prefetch(a.block, Tier::kHbm, v.now);
      }
    }
  }

 private:
  uint32_t depth_;
};

class LaxityPrefetch final : public Prefetcher {
 public:
  std::string_view name() const override { return "laxity"; }
  void plan(PrefetchView& v) override {
    const TimeNs window = v.until - v.now;
    bool hbm_blocked = false;
    for (size_t i = 0;; ++i) {
      const KnownSpan* span = v.known.span(i);
      // Spans come in eta order: once even the slowest transfer leaves laxity beyond the
      // window, no later block is due before the next decision point either.
      if (span == nullptr || span->eta - v.now - v.cache.max_transfer_time(v.now) > window) return;
      for (uint64_t p = span->begin; p < span->end; ++p) {
        const Access& a = v.stream[p];
        if (a.kind == AccessKind::kWrite || !movable(v.cache, a.block)) continue;
        const BlockId b = a.block;
        if (!hbm_blocked) {
          const TimeNs laxity = (span->eta - v.now) - v.cache.transfer_time(b, Tier::kHbm, v.now);
          if (laxity > window) continue;  // still in time at the next decision point
          if (room_without_harm(v, Tier::kHbm, p)) {
            v.cache.prefetch(b, Tier::kHbm, v.now);
            continue;
          }
          hbm_blocked = true;
        }
        if (v.cache.where(b) != Tier::kSsd) continue;
        const TimeNs laxity = (span->eta - v.now) - v.cache.transfer_time(b, Tier::kDram, v.now);
        if (laxity > window) continue;
        if (!room_without_harm(v, Tier::kDram, p)) return;
        v.cache.prefetch(b, Tier::kDram, v.now);
      }
    }
  }

 private:
  // Whether a block read at `use` can enter `t` without evicting one the runtime knows is
  // needed before it.
  static bool room_without_harm(PrefetchView& v, Tier t, uint64_t use) {
    if (v.cache.capacity(t) == 0) return false;
    const auto victim = v.cache.next_victim(t);
    if (!victim) return true;
    const uint64_t next = v.future.next_use(*victim);
    // Not needed anywhere the runtime can see, or needed after the fetched block.
    return next == FutureOracle::kNoFutureUse || !v.known.contains(next) || next > use;
  }
};

}  // namespace

std::vector<std::string> prefetcher_names() { return {"none", "causal", "oracle", "laxity"}; }

std::unique_ptr<Prefetcher> make_prefetcher(std::string_view name, uint32_t depth) {
  if (name == "none") return std::make_unique<NoPrefetch>();
  if (name == "causal") return std::make_unique<CausalPrefetch>(depth);
  if (name == "oracle") return std::make_unique<OraclePrefetch>(depth);
  if (name == "laxity") return std::make_unique<LaxityPrefetch>();
  return nullptr;
}

}  // namespace tempo::placement
