// A transfer link between two tiers, modelled as one FIFO server: transfers start in issue
// order, each when the link is free and its data is ready, and take latency + bytes/rate.
// Demand fetches and prefetches that share a Link therefore delay one another.
#pragma once

#include <cstdint>

#include "core/time.h"

namespace tempo::placement {

struct LinkSpec {
  double bytes_per_sec = 0;
  TimeNs latency_ns = 0;
};

class Link {
 public:
  explicit Link(LinkSpec spec) : spec_(spec) {}
  // Queues a transfer of `bytes` whose data is ready at `ready`; returns its completion.
  TimeNs transfer(uint64_t bytes, TimeNs ready);
  // The duration of a transfer of `bytes` on an idle link.
  TimeNs duration(uint64_t bytes) const;
  TimeNs busy_until() const { return busy_until_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t transfers() const { return transfers_; }
  TimeNs busy_time() const { return busy_time_; }
  const LinkSpec& spec() const { return spec_; }

 private:
  LinkSpec spec_;
  // The last size asked for and its duration: nearly every transfer is one block.
  mutable uint64_t memo_bytes_ = 0;
  mutable TimeNs memo_duration_ = 0;
  TimeNs busy_until_ = 0;
  TimeNs busy_time_ = 0;
  uint64_t bytes_ = 0;
  uint64_t transfers_ = 0;
};

}  // namespace tempo::placement
