#include "stack/blocking_calls.h"

#include <cerrno>
#include <memory>

namespace tempo {

int wait_claim_ready(Driver& driver, Stack& stack, ClaimId id, TimeNs timeout,
                     RetrievalOutcome* outcome) {
  if (timeout < 0) return -EINVAL;
  if (timeout > kMaxTimeNs - driver.now()) return -EOVERFLOW;
  int r = -EAGAIN;
  driver.wait_until(
      [&] {
        r = stack.readiness(id, outcome);
        return r != -EAGAIN;
      },
      timeout);
  return r == -EAGAIN ? -ETIMEDOUT : r;
}

int read_ordinary(Driver& driver, Stack& stack, ClaimId id) {
  struct Result {
    bool done = false;
    int status = 0;
  };
  // Shared with the callback: a read outliving a timed-out caller still has somewhere to land.
  auto result = std::make_shared<Result>();
  int r = 0;
  driver.call([&] {
    r = stack.ordinary_read(id, [result](int status) {
      result->done = true;
      result->status = status;
    });
  });
  if (r != 0) return r;
  // `result` is written on the driver and read there too (inside the wait's check).
  bool done = false;
  int status = 0;
  driver.wait_until(
      [&] {
        done = result->done;
        status = result->status;
        return done;
      },
      60 * kNsPerSec);
  return done ? status : -ETIMEDOUT;
}

}  // namespace tempo
