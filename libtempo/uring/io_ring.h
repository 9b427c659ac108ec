// A small io_uring wrapper: bounded in-flight requests, optional registered buffers, an
// eventfd for event loops, and a fault-injection hook at the I/O layer (tests use it to
// turn completions into read errors and short reads). Not thread-safe: the owner locks.
#pragma once

#include <liburing.h>
#include <sys/uio.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace tempo {

struct IoRequest {
  enum class Op : uint8_t { kRead, kWrite };
  Op op = Op::kRead;
  int fd = -1;
  void* buf = nullptr;
  uint32_t len = 0;
  uint64_t offset = 0;
  int buf_index = -1;  // registered buffer holding `buf`, or -1
  uint64_t tag = 0;    // the submitter's cookie, returned with the completion
};

// Sees every completion before its owner does and returns the result to deliver: `res`
// unchanged, a negative errno, or a shorter byte count.
using IoFaultHook = std::function<int(const IoRequest& req, int res)>;

class IoRing {
 public:
  using CompletionFn = std::function<void(const IoRequest& req, int res)>;

  // `entries` requests may be in flight at once. Returns 0 or a negative errno.
  static int create(unsigned entries, std::unique_ptr<IoRing>* out);
  ~IoRing();
  IoRing(const IoRing&) = delete;
  IoRing& operator=(const IoRing&) = delete;

  unsigned capacity() const { return static_cast<unsigned>(slots_.size()); }
  unsigned in_flight() const { return capacity() - static_cast<unsigned>(free_.size()); }

  // Registers fixed buffers (index = position in `iovs`) for IoRequest::buf_index.
  int register_buffers(std::span<const iovec> iovs);
  // Signals `efd` on every completion.
  int register_eventfd(int efd);
  void set_fault_hook(IoFaultHook hook) { hook_ = std::move(hook); }

  // Queues one request for the next submit(); -EBUSY when capacity() are in flight.
  int prepare(const IoRequest& req);
  // Submits what prepare() queued: the number submitted or a negative errno (-EAGAIN and
  // -EBUSY are transient: the requests stay queued for the next call).
  int submit();
  // Passes each completion to `fn`, waiting until at least `wait_nr` arrived. Returns how
  // many were reaped or a negative errno.
  int reap(unsigned wait_nr, const CompletionFn& fn);

  // Runs `reqs` to completion with at most capacity() in flight; a short transfer is
  // resubmitted for the rest. 0, or the first error (-EIO when a transfer makes no
  // progress); all requests have completed when it returns, unless submission itself
  // failed for good (then that error is returned at once).
  int run(std::span<const IoRequest> reqs);

 private:
  IoRing() = default;

  io_uring ring_{};
  bool initialised_ = false;
  std::vector<IoRequest> slots_;
  std::vector<uint32_t> free_;
  IoFaultHook hook_;
};

// The transfer left after a short completion of `req` that moved `done` bytes.
IoRequest io_remainder(const IoRequest& req, uint32_t done);

}  // namespace tempo
