// The protected-capacity ledger: bytes protected in the fast tier plus bytes reserved for
// outstanding staging, each object counted once, against a budget below the fast tier's
// size (no static partition: unprotected caching uses whatever is not protected). Also
// integrates the ledger over time, the numerator of the protected-capacity cost C.
#pragma once

#include <cstdint>

#include "core/time.h"

namespace tempo {

class CapacityLedger {
 public:
  CapacityLedger(uint64_t budget_bytes, TimeNs start);

  uint64_t budget() const { return budget_; }
  uint64_t bytes() const { return bytes_; }
  bool fits(uint64_t more) const { return more <= budget_ - bytes_; }
  // Callers check fits() first; adding past the budget is a programming error (aborts).
  void add(uint64_t bytes, TimeNs now);
  void sub(uint64_t bytes, TimeNs now);
  // Integral of the ledger in byte*seconds up to `now`.
  double byte_seconds(TimeNs now) const;

 private:
  void accrue(TimeNs now);

  uint64_t budget_;
  uint64_t bytes_ = 0;
  double byte_seconds_ = 0;
  TimeNs last_ = 0;
};

}  // namespace tempo
