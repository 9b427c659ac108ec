#include "placement/tiered_cache.h"

#include <algorithm>
#include <stdexcept>

namespace tempo::placement {

const char* tier_name(Tier t) {
  switch (t) {
    case Tier::kHbm:
      return "hbm";
    case Tier::kDram:
      return "dram";
    case Tier::kSsd:
      return "ssd";
    case Tier::kNone:
      break;
  }
  return "none";
}

namespace {
int idx(Tier t) { return static_cast<int>(t); }
}  // namespace

TieredCache::TieredCache(const TieredCacheConfig& config)
    : config_(config),
      pcie_up_(config.pcie_up, config.demand_priority),
      pcie_down_(config.pcie_down),
      ssd_(config.ssd, config.demand_priority) {
  if (config_.block_bytes == 0) throw std::invalid_argument("tiered cache: block_bytes is 0");
  if (config_.shape.total() == 0) throw std::invalid_argument("tiered cache: no capacity");
  for (const LinkSpec* l : {&config_.pcie_up, &config_.pcie_down, &config_.ssd}) {
    if (!(l->bytes_per_sec > 0) || l->latency_ns < 0) {
      throw std::invalid_argument("tiered cache: link rate must be > 0 and latency >= 0");
    }
  }
  cap_ = {config_.shape.hbm_blocks, config_.shape.dram_blocks, config_.shape.ssd_blocks};
  for (int t = 0; t < kNumTiers; ++t) {
    PolicyOptions o = config_.policy_options;
    o.capacity_entries = cap_[t];
    policies_[t] = make_study_policy(config_.policy, o);
    if (!policies_[t]) {
      throw std::invalid_argument("tiered cache: cannot make policy '" + config_.policy +
                                  "' (unknown name, invalid options, or min without a future)");
    }
  }
}

TieredCache::Block& TieredCache::block(BlockId b) {
  if (b >= blocks_.size()) blocks_.resize(std::max<size_t>(b + 1, blocks_.size() * 2));
  return blocks_[b];
}

void TieredCache::touch_history(Block& s) {
  AccessHistory& h = s.history;
  if (h.accesses > 0) {
    const auto gap = static_cast<double>(tick_ - h.last_access);
    const double a = config_.policy_options.ewma_alpha;
    h.gap_ewma_ns = h.gap_ewma_ns < 0 ? gap : a * gap + (1 - a) * h.gap_ewma_ns;
  }
  h.accesses += 1;
  h.lifetime += 1;
  h.last_access = tick_;
}

bool TieredCache::full(Tier t) const { return count_[idx(t)] >= cap_[idx(t)]; }

Tier TieredCache::lower_tier(Tier t) const {
  for (int i = idx(t) + 1; i < kNumTiers; ++i) {
    if (cap_[i] > 0) return static_cast<Tier>(i);
  }
  return Tier::kNone;
}

Tier TieredCache::top_tier() const {
  for (int i = 0; i < kNumTiers; ++i) {
    if (cap_[i] > 0) return static_cast<Tier>(i);
  }
  return Tier::kNone;
}

std::optional<BlockId> TieredCache::next_victim(Tier t) {
  if (!full(t)) return std::nullopt;
  return policy(t).pick_victim();
}

TimeNs TieredCache::demand_transfer(Link& link, uint64_t bytes, TimeNs ready) {
  moved_.clear();
  const TimeNs end = link.transfer_demand(bytes, ready, &moved_);
  for (const MovedTransfer& m : moved_) {
    if (m.tag == kNoBlock) continue;  // a speculative demotion write: nothing waits on it
    ++counters_.prefetches_overtaken;
    Block& p = blocks_[m.tag];
    if (&link != &ssd_) {
      if (p.ready_at == m.old_end) set_ready(p, m.new_end);
      continue;
    }
    // An SSD read headed for HBM is ready no earlier than the moved read plus the PCIe hop
    // after it (the hop's slot on PCIe is not re-queued: an approximation).
    const TimeNs hop = p.tier == Tier::kHbm ? pcie_up_.duration(bytes) : 0;
    if (p.ready_at >= m.old_end) set_ready(p, std::max(p.ready_at, m.new_end + hop));
  }
  return end;
}

void TieredCache::unplace(BlockId b) {
  Block& s = blocks_[b];
  policy(s.tier).remove(b);
  --count_[idx(s.tier)];
  s.tier = Tier::kNone;
}

void TieredCache::make_room(Tier t, BlockId incoming, TimeNs now, LinkBytes& lb) {
  const BlockId v = *policy(t).pick_victim_for(incoming);
  policy(t).evict(v);
  --count_[idx(t)];
  Block& s = blocks_[v];
  if (s.prefetched) {
    ++counters_.prefetch_wasted;
    s.prefetched = false;
  }
  const Tier lower = lower_tier(t);
  if (lower == Tier::kNone) {
    // Dropped: its KV is gone and its history restarts, except the lifetime count.
    const uint64_t lifetime = s.history.lifetime;
    s = Block{};
    s.history.lifetime = lifetime;
    ++counters_.drops;
    return;
  }
  const uint64_t bytes = config_.block_bytes;
  if (t == Tier::kHbm) {
    pcie_down_.transfer(bytes, now);
    lb.pcie_down += bytes;
  }
  if (lower == Tier::kSsd) {
    // A demotion a prefetch caused is as speculative as the prefetch: with demand priority
    // demand reads overtake its write.
    if (&lb == &counters_.prefetch) {
      ssd_.transfer_speculative(bytes, now, kNoBlock);
    } else {
      demand_transfer(ssd_, bytes, now);
    }
    lb.ssd_write += bytes;
  }
  ++counters_.demotions;
  s.tier = Tier::kNone;
  set_ready(s, now);
  place(v, lower, now, lb);
}

void TieredCache::place(BlockId b, Tier t, TimeNs now, LinkBytes& lb) {
  if (full(t)) make_room(t, b, now, lb);
  Block& s = blocks_[b];
  policy(t).add_with_history(b, config_.block_bytes, tick_, s.history);
  ++count_[idx(t)];
  s.tier = t;
}

ReadResult TieredCache::read(BlockId b, TimeNs now) {
  ++tick_;
  Block& s = block(b);
  touch_history(s);
  ReadResult r;
  const uint64_t bytes = config_.block_bytes;
  const Tier from = s.tier;
  if (s.prefetched) {
    r.was_prefetched = true;
    s.prefetched = false;
    ++counters_.prefetch_hits;
  }
  if (from == Tier::kNone) {
    r.source = Source::kRecompute;
    r.ready = now;
    ++counters_.reads_by_source[idx(Tier::kNone)];
    const Tier top = top_tier();
    LinkBytes& lb = counters_.demand;
    if (top != Tier::kHbm) {
      pcie_down_.transfer(bytes, now);
      lb.pcie_down += bytes;
      if (top == Tier::kSsd) {
        demand_transfer(ssd_, bytes, now);
        lb.ssd_write += bytes;
      }
    }
    place(b, top, now, lb);
    return r;
  }
  r.source = static_cast<Source>(idx(from));
  ++counters_.reads_by_source[idx(from)];
  const TimeNs data_ready = std::max(now, s.ready_at);
  if (from == Tier::kHbm) {
    policy(Tier::kHbm).record_access(b, tick_);
    r.ready = data_ready;
    r.waited_on = data_ready > now ? s.came_from : Tier::kHbm;
    return r;
  }
  LinkBytes& lb = counters_.demand;
  TimeNs host_ready = data_ready;
  if (from == Tier::kSsd) {
    host_ready = demand_transfer(ssd_, bytes, data_ready);
    lb.ssd_read += bytes;
  }
  r.ready = demand_transfer(pcie_up_, bytes, host_ready);
  lb.pcie_up += bytes;
  // A block a prefetch is still staging into this tier waits on the tier it came from.
  r.waited_on = data_ready > now && s.came_from != Tier::kNone ? s.came_from : from;
  if (cap_[idx(Tier::kHbm)] == 0) {
    // No HBM tier to promote into: the block is streamed to the GPU and stays below,
    // except that an SSD block is staged up into DRAM when DRAM exists.
    if (from == Tier::kSsd && cap_[idx(Tier::kDram)] > 0) {
      unplace(b);
      place(b, Tier::kDram, now, lb);
      ++counters_.promotions;
    } else {
      policy(from).record_access(b, tick_);
    }
    return r;
  }
  unplace(b);
  place(b, Tier::kHbm, now, lb);
  set_ready(s, r.ready);
  ++counters_.promotions;
  return r;
}

void TieredCache::write(BlockId b, TimeNs now) {
  ++tick_;
  Block& s = block(b);
  touch_history(s);
  ++counters_.writes;
  if (s.tier != Tier::kNone) {
    ++counters_.write_hits;
    policy(s.tier).record_access(b, tick_);
    return;
  }
  const Tier top = top_tier();
  LinkBytes& lb = counters_.demand;
  if (top != Tier::kHbm) {
    pcie_down_.transfer(config_.block_bytes, now);
    lb.pcie_down += config_.block_bytes;
    if (top == Tier::kSsd) {
      demand_transfer(ssd_, config_.block_bytes, now);
      lb.ssd_write += config_.block_bytes;
    }
  }
  place(b, top, now, lb);
  set_ready(blocks_[b], now);
}

TimeNs TieredCache::transfer_time(BlockId b, Tier to, TimeNs now) const {
  const Block& s = blocks_[b];
  const uint64_t bytes = config_.block_bytes;
  TimeNs t = std::max(now, s.ready_at);
  if (s.tier == Tier::kSsd) t = std::max(t, ssd_.busy_until()) + ssd_.duration(bytes);
  if (to == Tier::kHbm) t = std::max(t, pcie_up_.busy_until()) + pcie_up_.duration(bytes);
  return t - now;
}

TimeNs TieredCache::max_transfer_time(TimeNs now) const {
  const uint64_t bytes = config_.block_bytes;
  TimeNs t = std::max({now, latest_ready_, ssd_.busy_until()}) + ssd_.duration(bytes);
  t = std::max(t, pcie_up_.busy_until()) + pcie_up_.duration(bytes);
  return t - now;
}

bool TieredCache::prefetch(BlockId b, Tier to, TimeNs now) {
  if (b >= blocks_.size()) return false;
  Block& s = blocks_[b];
  if (s.tier == Tier::kNone || idx(s.tier) <= idx(to) || cap_[idx(to)] == 0) return false;
  const Tier from = s.tier;
  const uint64_t bytes = config_.block_bytes;
  LinkBytes& lb = counters_.prefetch;
  TimeNs ready = std::max(now, s.ready_at);
  if (from == Tier::kSsd) {
    ready = ssd_.transfer_speculative(bytes, ready, b);
    lb.ssd_read += bytes;
  }
  if (to == Tier::kHbm) {
    ready = pcie_up_.transfer_speculative(bytes, ready, b);
    lb.pcie_up += bytes;
  }
  unplace(b);
  place(b, to, now, lb);
  Block& moved = blocks_[b];
  set_ready(moved, ready);
  moved.prefetched = true;
  moved.came_from = from;
  ++counters_.prefetches;
  ++counters_.promotions;
  return true;
}

}  // namespace tempo::placement
