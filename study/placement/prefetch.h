// Prefetchers: move blocks up the hierarchy ahead of the read that needs them, on the same
// links demand fetches use (a speculative transfer queues ahead of later demand ones).
//   none    - never.
//   causal  - past accesses only: a successor table (the block read after b last time)
//             and an exit table (the block that began the run after a run ending at b).
//             At a decision point it fetches `depth` blocks along the successor chain
//             from the predicted start of the next run: where the last run ending at this
//             block went (skipping blocks this run already read), else the start of this
//             run again (decode passes reread the sequence) while such repeats keep being
//             confirmed by the reads that follow.
//   oracle  - reads the real future: every block of the next `depth` accesses that is not
//             in HBM, as early as possible, evicting whatever the policy ranks lowest.
//   laxity  - knows only what a runtime knows (the running request's next decode pass and
//             the prefill contexts of requests already queued), and issues a block when its
//             laxity, time-to-use minus time-to-ready with link queueing included, would
//             fall below zero before the next decision point; it never evicts a block
//             whose next known use comes before the fetched block's. An SSD block that
//             cannot go to HBM under that rule is staged into DRAM under the same rule.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "placement/future.h"
#include "placement/tiered_cache.h"
#include "placement/workload.h"

namespace tempo::placement {

// A run of stream positions the runtime knows about, expected to be read around `eta`.
struct KnownSpan {
  uint64_t begin = 0, end = 0;
  TimeNs eta = 0;
};

// What the runtime knows is coming at a decision point, produced on demand so that a
// prefetcher that looks only a little ahead pays only for what it looks at (the queue of
// waiting requests can be long). Spans come in order of eta (non-decreasing) and of
// stream position (increasing, disjoint).
class KnownReads {
 public:
  virtual ~KnownReads() = default;
  // The i-th span, or nullptr past the last. Valid until the next call.
  virtual const KnownSpan* span(size_t i) = 0;
  // Whether stream position `pos` lies in one of the spans.
  virtual bool contains(uint64_t pos) const = 0;
};

// KnownReads over a list given up front.
class KnownList final : public KnownReads {
 public:
  explicit KnownList(std::vector<KnownSpan> spans = {}) : spans_(std::move(spans)) {}
  const KnownSpan* span(size_t i) override { return i < spans_.size() ? &spans_[i] : nullptr; }
  bool contains(uint64_t pos) const override;

 private:
  std::vector<KnownSpan> spans_;
};

struct PrefetchView {
  TieredCache& cache;
  const std::vector<Access>& stream;
  const StreamFuture& future;  // the real future (only the oracle may read past `known`)
  uint64_t pos = 0;            // the next stream position to be accessed
  KnownReads& known;
  TimeNs now = 0;
  TimeNs until = 0;  // the next decision point
};

class Prefetcher {
 public:
  virtual ~Prefetcher() = default;
  virtual std::string_view name() const = 0;
  // Every demand read, in order.
  virtual void on_read(BlockId /*b*/) {}
  // Whether plan() does anything at all (the engine skips the decision points otherwise).
  virtual bool plans() const { return true; }
  virtual void plan(PrefetchView& v) = 0;
};

std::vector<std::string> prefetcher_names();
// nullptr for an unknown name.
std::unique_ptr<Prefetcher> make_prefetcher(std::string_view name, uint32_t depth);

}  // namespace tempo::placement
