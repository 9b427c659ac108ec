// Small reference implementations of the textbook policies, written for the differential
// tests straight from their definitions (not from libtempo/policy): each one replays a
// reference string on a demand-paged cache of `capacity` entries and counts the misses.
// Slow on purpose (linear scans): they are meant to be obviously right.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "policy/eviction_policy.h"

namespace tempo::reference {

// LRU: on a miss with a full cache, drop the entry referenced longest ago.
inline uint64_t lru_misses(size_t capacity, const std::vector<BlockId>& trace) {
  std::deque<BlockId> order;  // front = most recent
  uint64_t misses = 0;
  for (BlockId x : trace) {
    auto it = std::find(order.begin(), order.end(), x);
    if (it != order.end()) {
      order.erase(it);
    } else {
      ++misses;
      if (order.size() == capacity) order.pop_back();
    }
    order.push_front(x);
  }
  return misses;
}

// LFU: drop the entry with the fewest references, the one referenced longest ago among
// equals. In-cache LFU counts references since the entry was last brought in; perfect LFU
// (`persistent`) counts every reference ever made to the id.
inline uint64_t lfu_misses(size_t capacity, const std::vector<BlockId>& trace, bool persistent) {
  std::map<BlockId, uint64_t> ever;  // references so far, per id
  struct Entry {
    uint64_t count, last;
  };
  std::map<BlockId, Entry> cache;
  uint64_t misses = 0;
  for (uint64_t t = 0; t < trace.size(); ++t) {
    const BlockId x = trace[t];
    const uint64_t total = ++ever[x];
    auto it = cache.find(x);
    if (it != cache.end()) {
      it->second = {it->second.count + 1, t};
      continue;
    }
    ++misses;
    if (cache.size() == capacity) {
      auto victim = cache.begin();
      for (auto c = cache.begin(); c != cache.end(); ++c) {
        const Entry& a = c->second;
        const Entry& b = victim->second;
        if (a.count < b.count || (a.count == b.count && a.last < b.last)) victim = c;
      }
      cache.erase(victim);
    }
    cache[x] = {persistent ? total : 1, t};
  }
  return misses;
}

// Belady's MIN: drop the entry whose next reference is furthest away (never = infinity).
inline uint64_t min_misses(size_t capacity, const std::vector<BlockId>& trace) {
  std::vector<BlockId> cache;
  uint64_t misses = 0;
  for (size_t t = 0; t < trace.size(); ++t) {
    const BlockId x = trace[t];
    if (std::find(cache.begin(), cache.end(), x) != cache.end()) continue;
    ++misses;
    if (cache.size() == capacity) {
      size_t victim = 0, furthest = 0;
      for (size_t i = 0; i < cache.size(); ++i) {
        size_t next = t + 1;
        while (next < trace.size() && trace[next] != cache[i]) ++next;
        if (next > furthest) {
          furthest = next;
          victim = i;
        }
      }
      cache.erase(cache.begin() + static_cast<std::ptrdiff_t>(victim));
    }
    cache.push_back(x);
  }
  return misses;
}

// ARC, transcribed from Megiddo & Modha, "ARC: A Self-Tuning, Low Overhead Replacement
// Cache" (FAST'03), Fig. 4: cases I-IV and REPLACE(x, p). Lists are front = MRU.
inline uint64_t arc_misses(size_t capacity, const std::vector<BlockId>& trace) {
  const auto c = static_cast<double>(capacity);
  double p = 0;
  std::deque<BlockId> t1, t2, b1, b2;
  auto in = [](const std::deque<BlockId>& l, BlockId x) {
    return std::find(l.begin(), l.end(), x) != l.end();
  };
  auto erase = [](std::deque<BlockId>& l, BlockId x) { l.erase(std::find(l.begin(), l.end(), x)); };
  auto replace = [&](BlockId x) {
    const auto n1 = static_cast<double>(t1.size());
    if (!t1.empty() && ((in(b2, x) && n1 == p) || n1 > p)) {
      b1.push_front(t1.back());
      t1.pop_back();
    } else {
      b2.push_front(t2.back());
      t2.pop_back();
    }
  };
  uint64_t misses = 0;
  for (BlockId x : trace) {
    if (in(t1, x) || in(t2, x)) {  // case I
      erase(in(t1, x) ? t1 : t2, x);
      t2.push_front(x);
      continue;
    }
    ++misses;
    const auto n1 = static_cast<double>(b1.size());
    const auto n2 = static_cast<double>(b2.size());
    if (in(b1, x)) {  // case II
      p = std::min(c, p + std::max(n2 / n1, 1.0));
      replace(x);
      erase(b1, x);
      t2.push_front(x);
      continue;
    }
    if (in(b2, x)) {  // case III
      p = std::max(0.0, p - std::max(n1 / n2, 1.0));
      replace(x);
      erase(b2, x);
      t2.push_front(x);
      continue;
    }
    const size_t l1 = t1.size() + b1.size();  // case IV
    const size_t all = l1 + t2.size() + b2.size();
    if (l1 == capacity) {
      if (t1.size() < capacity) {
        b1.pop_back();
        replace(x);
      } else {
        t1.pop_back();
      }
    } else if (all >= capacity) {
      if (all == 2 * capacity) b2.pop_back();
      replace(x);
    }
    t1.push_front(x);
  }
  return misses;
}

// The policies that claim a textbook name, with their references. predicted-reuse claims
// to be LRU decision for decision (the paper's shipped heuristic).
struct Textbook {
  const char* policy;
  uint64_t (*misses)(size_t, const std::vector<BlockId>&);
};
inline std::vector<Textbook> textbook_policies() {
  return {
      {"lru", lru_misses},
      {"predicted-reuse", lru_misses},
      {"reuse-frequency",
       [](size_t c, const std::vector<BlockId>& t) { return lfu_misses(c, t, false); }},
      {"reuse-frequency-persistent",
       [](size_t c, const std::vector<BlockId>& t) { return lfu_misses(c, t, true); }},
      {"arc", arc_misses},
      {"min", min_misses},
  };
}

// Random reference strings of several shapes, deterministic in `seed` (SplitMix64).
inline std::vector<BlockId> random_stream(uint64_t seed, size_t n) {
  uint64_t s = seed;
  auto next = [&s] {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  const uint64_t universe = 4 + next() % 60;
  const uint64_t shape = seed % 4;
  std::vector<BlockId> t(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t r = next();
    switch (shape) {
      case 0:  // uniform
        t[i] = r % universe;
        break;
      case 1:  // skewed: half the references to an eighth of the ids
        t[i] = (r & 1) != 0 ? (r >> 1) % std::max<uint64_t>(1, universe / 8) : (r >> 1) % universe;
        break;
      case 2:  // loops of varying length with noise, the scans of a decode pass
        t[i] = (r % 8 == 0) ? (r >> 3) % universe : i % (1 + (i / 97) % universe);
        break;
      default:  // phases: the hot set shifts every 200 references
        t[i] = (i / 200) * 7 + r % std::max<uint64_t>(2, universe / 3);
        break;
    }
  }
  return t;
}

}  // namespace tempo::reference
