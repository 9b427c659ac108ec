// Metadata-only projection of a staging queue: operations in issue order, at most `slots`
// in service at once, sharing an aggregate rate equally (processor sharing). Nothing is
// read or reserved.
//
// Every operation in service gains service at the same speed, so the model runs on a
// virtual clock counted in bytes of service per operation: an operation admitted at tag s
// with r bytes to move ends at tag s + r, and admission is list scheduling of the queue
// over `slots` slots (each operation takes the slot that frees first). Real time follows
// from the work done: while anything is in service the queue moves `rate` bytes a second,
// so the queue reaches tag v after work_at(v) / rate seconds. Integer bytes throughout:
// two computations of the same projection agree to the nanosecond.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/time.h"

namespace tempo {

// Bytes at `rate_bps` as nanoseconds, rounded to the nearest.
TimeNs bytes_to_ns(uint64_t bytes, double rate_bps);
// Whole bytes `rate_bps` moves in `dt` (0 for dt <= 0), saturating at UINT64_MAX.
uint64_t bytes_in(TimeNs dt, double rate_bps);

// `count` consecutive reads of `bytes` each.
struct ReadRun {
  uint64_t bytes = 0;
  uint64_t count = 0;
  bool operator==(const ReadRun&) const = default;
};

class QueueProjection {
 public:
  // Lays out `remaining` (bytes each operation still has to move, in issue order).
  void build(std::span<const uint64_t> remaining, uint32_t slots);

  size_t size() const { return start_.size(); }
  uint64_t start(size_t i) const { return start_[i]; }
  uint64_t finish(size_t i) const { return start_[i] + remaining_[i]; }
  // Bytes the whole queue still has to move.
  uint64_t total() const { return total_; }
  // The tag at which the last operation ends (0 when empty).
  uint64_t last() const { return last_; }
  // Bytes moved by the time the queue reaches tag v: sum of clamp(v - start, 0, remaining).
  uint64_t work_at(uint64_t v) const;
  // The largest tag v with work_at(v) <= work (last() once work >= total()).
  uint64_t tag_for_work(uint64_t work) const;
  // The tag at which the slot that frees first does so, once every operation is placed.
  uint64_t first_free() const { return free_.front(); }
  // Reads issued after the queue, none admitted before tag `from`: the tag at which the
  // last of them ends (`from` when there are none).
  uint64_t place_after(std::span<const ReadRun> reads, uint64_t from) const;
  // The slots' free tags as place_after(reads, from) starts from: ascending, none before
  // `from`, into *out.
  void slots_from(uint64_t from, std::vector<uint64_t>* out) const;
  // How far the slots place_after(., from) starts from lie from `basis` (slots_from of an
  // earlier layout): the largest difference slot by slot, UINT64_MAX for another slot
  // count. List scheduling moves each read's end by at most the largest move of a slot's
  // free tag, so reads that ended at tag e placed after `basis` end within e +- this.
  uint64_t distance(std::span<const uint64_t> basis, uint64_t from) const;

 private:
  std::vector<uint64_t> remaining_;
  std::vector<uint64_t> start_;
  std::vector<uint64_t> free_;  // each slot's free tag after the queue, ascending
  // work_at as a piecewise-linear function: at knots_[j] it is work_[j], and slope_[j]
  // operations are in service up to the next knot.
  std::vector<uint64_t> knots_;
  std::vector<uint64_t> work_;
  std::vector<uint32_t> slope_;
  uint64_t total_ = 0;
  uint64_t last_ = 0;
  // place_after's scratch: the slots' free tags ascending, the tags a run of reads frees.
  mutable std::vector<uint64_t> slots_, freed_, merged_;
};

}  // namespace tempo
