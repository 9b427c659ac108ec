// A transfer link between two tiers, modelled as one FIFO server: transfers start in issue
// order, each when the link is free and its data is ready, and take latency + bytes/rate.
// Demand fetches and prefetches that share a Link therefore delay one another.
// With demand priority on, a demand transfer overtakes speculative (prefetch) transfers
// that have not started when it could start; those move back, and the caller is told.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "core/time.h"

namespace tempo::placement {

struct LinkSpec {
  double bytes_per_sec = 0;
  TimeNs latency_ns = 0;
};

// A speculative transfer that a demand transfer pushed back.
struct MovedTransfer {
  uint64_t tag;
  TimeNs old_end, new_end;
};

class Link {
 public:
  explicit Link(LinkSpec spec, bool demand_priority = false)
      : spec_(spec), demand_priority_(demand_priority) {}
  // Queues a transfer of `bytes` whose data is ready at `ready`; returns its completion.
  // It is never overtaken (demotions and other committed traffic).
  TimeNs transfer(uint64_t bytes, TimeNs ready);
  // A demand transfer: with demand priority it goes ahead of speculative transfers not
  // yet started, appending each one it moves to *moved. Without, the same as transfer().
  TimeNs transfer_demand(uint64_t bytes, TimeNs ready, std::vector<MovedTransfer>* moved);
  // A speculative transfer named `tag` (the block it carries).
  TimeNs transfer_speculative(uint64_t bytes, TimeNs ready, uint64_t tag);
  // The duration of a transfer of `bytes` on an idle link.
  TimeNs duration(uint64_t bytes) const;
  TimeNs busy_until() const { return busy_until_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t transfers() const { return transfers_; }
  TimeNs busy_time() const { return busy_time_; }
  const LinkSpec& spec() const { return spec_; }

 private:
  struct Pending {
    uint64_t tag;
    TimeNs start, end;
  };
  TimeNs schedule(uint64_t bytes, TimeNs start);

  LinkSpec spec_;
  bool demand_priority_;
  std::deque<Pending> speculative_;  // not yet started when last looked at, in start order
  TimeNs committed_until_ = 0;       // end of the last transfer that cannot be overtaken
  // The last size asked for and its duration: nearly every transfer is one block.
  mutable uint64_t memo_bytes_ = 0;
  mutable TimeNs memo_duration_ = 0;
  TimeNs busy_until_ = 0;
  TimeNs busy_time_ = 0;
  uint64_t bytes_ = 0;
  uint64_t transfers_ = 0;
};

}  // namespace tempo::placement
