#include "provider/capacity_ledger.h"

#include <cstdlib>

namespace tempo {

CapacityLedger::CapacityLedger(uint64_t budget_bytes, TimeNs start)
    : budget_(budget_bytes), last_(start) {}

void CapacityLedger::accrue(TimeNs now) {
  if (now > last_) {
    byte_seconds_ += static_cast<double>(bytes_) * ns_to_sec(now - last_);
    last_ = now;
  }
}

void CapacityLedger::add(uint64_t bytes, TimeNs now) {
  if (!fits(bytes)) std::abort();
  accrue(now);
  bytes_ += bytes;
}

void CapacityLedger::sub(uint64_t bytes, TimeNs now) {
  if (bytes > bytes_) std::abort();
  accrue(now);
  bytes_ -= bytes;
}

double CapacityLedger::byte_seconds(TimeNs now) const {
  return byte_seconds_ + (now > last_ ? static_cast<double>(bytes_) * ns_to_sec(now - last_) : 0);
}

}  // namespace tempo
