#include "fasttier/extent_allocator.h"

#include <algorithm>
#include <cerrno>
#include <iterator>

namespace tempo {

ExtentAllocator::ExtentAllocator(uint64_t capacity, uint64_t unit)
    : capacity_(capacity & ~(unit - 1)), unit_(unit) {
  if (capacity_ > 0) insert_free(0, capacity_);
}

void ExtentAllocator::insert_free(uint64_t offset, uint64_t len) {
  by_offset_.emplace(offset, len);
  by_size_.emplace(len, offset);
  free_bytes_ += len;
}

void ExtentAllocator::erase_free(std::map<uint64_t, uint64_t>::iterator it) {
  by_size_.erase({it->second, it->first});
  free_bytes_ -= it->second;
  by_offset_.erase(it);
}

int64_t ExtentAllocator::allocate(uint64_t bytes) {
  if (bytes == 0) return -EINVAL;
  const uint64_t len = round_up(bytes);
  auto fit = by_size_.lower_bound({len, 0});
  if (fit == by_size_.end()) {
    if (free_bytes_ >= len) ++failed_;
    return -ENOSPC;
  }
  const uint64_t offset = fit->second;
  const uint64_t extent_len = fit->first;
  erase_free(by_offset_.find(offset));
  if (extent_len > len) insert_free(offset + len, extent_len - len);
  ++allocations_;
  return static_cast<int64_t>(offset);
}

int ExtentAllocator::allocate_extents(uint64_t bytes, std::vector<Extent>* out) {
  if (bytes == 0) return -EINVAL;
  uint64_t left = round_up(bytes);
  if (free_bytes_ < left) return -ENOSPC;
  while (left > 0) {
    // The best fit for what is left, or else the largest extent there is.
    auto fit = by_size_.lower_bound({left, 0});
    if (fit == by_size_.end()) fit = std::prev(by_size_.end());
    const uint64_t offset = fit->second;
    const uint64_t extent_len = fit->first;
    const uint64_t take = std::min(extent_len, left);
    erase_free(by_offset_.find(offset));
    if (extent_len > take) insert_free(offset + take, extent_len - take);
    out->push_back(Extent{offset, take});
    ++allocations_;
    left -= take;
  }
  return 0;
}

int ExtentAllocator::reserve(uint64_t offset, uint64_t bytes) {
  const uint64_t len = round_up(bytes);
  if (len == 0 || (offset & (unit_ - 1)) != 0 || offset > capacity_ || len > capacity_ - offset)
    return -EINVAL;
  auto it = by_offset_.upper_bound(offset);
  if (it == by_offset_.begin()) return -EEXIST;
  --it;
  const uint64_t start = it->first;
  const uint64_t end = start + it->second;
  if (offset + len > end) return -EEXIST;
  erase_free(it);
  if (offset > start) insert_free(start, offset - start);
  if (offset + len < end) insert_free(offset + len, end - offset - len);
  ++allocations_;
  return 0;
}

void ExtentAllocator::release(uint64_t offset, uint64_t bytes) {
  uint64_t start = offset;
  uint64_t len = round_up(bytes);
  auto next = by_offset_.lower_bound(start);
  if (next != by_offset_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      len += prev->second;
      erase_free(prev);
    }
  }
  next = by_offset_.lower_bound(start + len);
  if (next != by_offset_.end() && next->first == start + len) {
    len += next->second;
    erase_free(next);
  }
  insert_free(start, len);
  --allocations_;
}

uint64_t ExtentAllocator::largest_free() const {
  return by_size_.empty() ? 0 : by_size_.rbegin()->first;
}

FragmentationStats ExtentAllocator::stats() const {
  FragmentationStats s;
  s.capacity = capacity_;
  s.free_bytes = free_bytes_;
  s.used_bytes = capacity_ - free_bytes_;
  s.free_extents = by_offset_.size();
  s.largest_free = largest_free();
  s.allocations = allocations_;
  s.failed_allocations = failed_;
  return s;
}

FragmentationStats ExtentAllocator::stats_below_tail() const {
  FragmentationStats s = stats();
  if (by_offset_.empty()) return s;
  const auto tail = std::prev(by_offset_.end());
  if (tail->first + tail->second != capacity_) return s;
  s.capacity = tail->first;
  s.free_bytes -= tail->second;
  s.free_extents -= 1;
  s.largest_free = 0;
  for (auto it = by_size_.rbegin(); it != by_size_.rend(); ++it) {
    if (it->second != tail->first) {
      s.largest_free = it->first;
      break;
    }
  }
  return s;
}

}  // namespace tempo
