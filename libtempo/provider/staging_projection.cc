#include "provider/staging_projection.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <utility>

namespace tempo {

TimeNs bytes_to_ns(uint64_t bytes, double rate_bps) {
  return static_cast<TimeNs>(std::llround(static_cast<double>(bytes) / rate_bps * 1e9));
}

uint64_t bytes_in(TimeNs dt, double rate_bps) {
  if (dt <= 0) return 0;
  const double b = std::floor(rate_bps * ns_to_sec(dt));
  return b >= 0x1p64 ? UINT64_MAX : static_cast<uint64_t>(b);
}

void QueueProjection::build(std::span<const uint64_t> remaining, uint32_t slots) {
  slots = std::max<uint32_t>(slots, 1);
  remaining_.assign(remaining.begin(), remaining.end());
  start_.resize(remaining.size());
  free_.assign(slots, 0);  // a min-heap while placing
  total_ = 0;
  last_ = 0;
  std::vector<std::pair<uint64_t, int>> edges;  // (tag, +1 admitted / -1 ended)
  edges.reserve(2 * remaining.size());
  const auto later = std::greater<uint64_t>();
  for (size_t i = 0; i < remaining.size(); ++i) {
    std::pop_heap(free_.begin(), free_.end(), later);
    start_[i] = free_.back();
    free_.back() = start_[i] + remaining[i];
    std::push_heap(free_.begin(), free_.end(), later);
    total_ += remaining[i];
    last_ = std::max(last_, start_[i] + remaining[i]);
    if (remaining[i] == 0) continue;
    edges.emplace_back(start_[i], 1);
    edges.emplace_back(start_[i] + remaining[i], -1);
  }
  std::sort(free_.begin(), free_.end());
  std::sort(edges.begin(), edges.end());
  knots_.clear();
  work_.clear();
  slope_.clear();
  uint64_t work = 0;
  int64_t slope = 0;
  for (const auto& [tag, delta] : edges) {
    if (knots_.empty() || knots_.back() != tag) {
      if (!knots_.empty()) work += static_cast<uint64_t>(slope) * (tag - knots_.back());
      knots_.push_back(tag);
      work_.push_back(work);
      slope_.push_back(0);
    }
    slope += delta;
    slope_.back() = static_cast<uint32_t>(slope);
  }
}

uint64_t QueueProjection::work_at(uint64_t v) const {
  auto it = std::upper_bound(knots_.begin(), knots_.end(), v);
  if (it == knots_.begin()) return 0;
  const size_t j = static_cast<size_t>(it - knots_.begin()) - 1;
  return work_[j] + uint64_t{slope_[j]} * (v - knots_[j]);
}

uint64_t QueueProjection::tag_for_work(uint64_t work) const {
  if (work >= total_) return last_;
  // The last knot at or below `work`; some operation is in service from it (work < total).
  auto it = std::upper_bound(work_.begin(), work_.end(), work);
  const size_t j = static_cast<size_t>(it - work_.begin()) - 1;
  return knots_[j] + (work - work_[j]) / slope_[j];
}

uint64_t QueueProjection::place_after(std::span<const ReadRun> reads, uint64_t from) const {
  // The slots' free tags ascending, and a sentinel after them.
  const size_t n = free_.size();
  slots_.resize(n + 1);
  uint64_t* s = slots_.data();
  for (size_t i = 0; i < n; ++i) s[i] = std::max(free_[i], from);
  s[n] = UINT64_MAX;
  uint64_t end = from;
  for (const ReadRun& run : reads) {
    if (run.count == 0) continue;
    if (run.count == 1) {
      // The read takes the first slot; its new free tag goes in order among the others
      // (without a branch: reads of mixed sizes land anywhere).
      uint64_t carry = s[0] + run.bytes;
      end = std::max(end, carry);
      for (size_t i = 1; i < n; ++i) {
        const uint64_t next = s[i];
        s[i - 1] = std::min(next, carry);
        carry = std::max(next, carry);
      }
      s[n - 1] = carry;
      continue;
    }
    // Each read takes the slot that frees first; within a run of equal reads the tags at
    // which they free their slots come in ascending order, so two sorted queues (the slots
    // as they were, the slots the run freed) replace a heap.
    if (freed_.size() < run.count) freed_.resize(run.count);
    uint64_t* f = freed_.data();
    size_t a = 0, b = 0;
    for (uint64_t k = 0; k < run.count; ++k) {
      const uint64_t at = b < k && f[b] < s[a] ? f[b++] : s[a++];
      f[k] = at + run.bytes;
    }
    end = std::max(end, f[run.count - 1]);
    merged_.resize(n + 1);
    std::merge(s + a, s + n, f + b, f + run.count, merged_.data());
    merged_[n] = UINT64_MAX;
    slots_.swap(merged_);
    s = slots_.data();
  }
  return end;
}

void QueueProjection::slots_from(uint64_t from, std::vector<uint64_t>* out) const {
  out->resize(free_.size());
  for (size_t i = 0; i < free_.size(); ++i) (*out)[i] = std::max(free_[i], from);
}

uint64_t QueueProjection::distance(std::span<const uint64_t> basis, uint64_t from) const {
  if (basis.size() != free_.size()) return UINT64_MAX;
  uint64_t d = 0;
  for (size_t i = 0; i < basis.size(); ++i) {
    const uint64_t s = std::max(free_[i], from);
    d = std::max(d, s > basis[i] ? s - basis[i] : basis[i] - s);
  }
  return d;
}

}  // namespace tempo
