// Variable-size extent allocator over an address range [0, capacity): best fit (smallest
// free extent that fits, lowest address on ties) with immediate coalescing of neighbours.
// Best fit with coalescing keeps external fragmentation low when sizes cluster, as KV
// objects do (full chunks of one size plus shorter tail chunks). Used for the fast tier's
// arena and for the object store's data file. Not thread-safe: the owner locks.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace tempo {

struct Extent {
  uint64_t offset = 0;
  uint64_t len = 0;
  friend bool operator==(const Extent&, const Extent&) = default;
};

struct FragmentationStats {
  uint64_t capacity = 0;
  uint64_t used_bytes = 0;
  uint64_t free_bytes = 0;
  uint64_t free_extents = 0;
  uint64_t largest_free = 0;
  uint64_t allocations = 0;         // live allocations
  uint64_t failed_allocations = 0;  // -ENOSPC although free_bytes >= the rounded size
  // 1 - largest_free / free_bytes: 0 when all free space is one extent.
  double fragmentation() const {
    return free_bytes == 0
               ? 0.0
               : 1.0 - static_cast<double>(largest_free) / static_cast<double>(free_bytes);
  }
};

class ExtentAllocator {
 public:
  // `unit` (a power of two) is the allocation granularity and alignment of every offset.
  ExtentAllocator(uint64_t capacity, uint64_t unit);

  uint64_t unit() const { return unit_; }
  uint64_t capacity() const { return capacity_; }
  uint64_t round_up(uint64_t bytes) const { return (bytes + unit_ - 1) & ~(unit_ - 1); }

  // Offset of a new extent of round_up(bytes) bytes; -ENOSPC when no free extent fits,
  // -EINVAL for zero bytes.
  int64_t allocate(uint64_t bytes);
  // Covers round_up(bytes) with one extent when one fits (best fit), otherwise with the
  // fewest free extents, largest first: fails (-ENOSPC) only when free_bytes() is short, so
  // holes never force an eviction. Appends the extents to `out`.
  int allocate_extents(uint64_t bytes, std::vector<Extent>* out);
  // Marks [offset, offset + round_up(bytes)) used (catalog replay): -EEXIST when any of it
  // is already used, -EINVAL when unaligned or outside the range.
  int reserve(uint64_t offset, uint64_t bytes);
  // Returns an extent obtained from allocate() or reserve(), with the same size.
  void release(uint64_t offset, uint64_t bytes);

  uint64_t free_bytes() const { return free_bytes_; }
  uint64_t largest_free() const;
  FragmentationStats stats() const;
  // The same, over [0, start of the free extent that ends the range): for a space that
  // grows at its end (a sparse data file), the part in use so far.
  FragmentationStats stats_below_tail() const;

 private:
  void insert_free(uint64_t offset, uint64_t len);
  void erase_free(std::map<uint64_t, uint64_t>::iterator it);

  uint64_t capacity_;
  uint64_t unit_;
  uint64_t free_bytes_ = 0;
  uint64_t allocations_ = 0;
  uint64_t failed_ = 0;
  std::map<uint64_t, uint64_t> by_offset_;           // free extents: offset -> length
  std::set<std::pair<uint64_t, uint64_t>> by_size_;  // free extents: (length, offset)
};

}  // namespace tempo
