#include "uring/io_ring.h"

#include <cerrno>
#include <deque>

namespace tempo {

int IoRing::create(unsigned entries, std::unique_ptr<IoRing>* out) {
  if (entries == 0) return -EINVAL;
  std::unique_ptr<IoRing> r(new IoRing());
  int ret = io_uring_queue_init(entries, &r->ring_, 0);
  if (ret < 0) return ret;
  r->initialised_ = true;
  r->slots_.resize(entries);
  r->free_.reserve(entries);
  for (uint32_t i = entries; i > 0; --i) r->free_.push_back(i - 1);
  *out = std::move(r);
  return 0;
}

IoRing::~IoRing() {
  if (!initialised_) return;
  // Requests still in flight would write into memory the owner is about to free.
  if (in_flight() > 0) reap(in_flight(), [](const IoRequest&, int) {});
  io_uring_queue_exit(&ring_);
}

int IoRing::register_buffers(std::span<const iovec> iovs) {
  return io_uring_register_buffers(&ring_, iovs.data(), static_cast<unsigned>(iovs.size()));
}

int IoRing::register_eventfd(int efd) { return io_uring_register_eventfd(&ring_, efd); }

int IoRing::prepare(const IoRequest& req) {
  if (free_.empty()) return -EBUSY;
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) return -EBUSY;
  const uint32_t slot = free_.back();
  free_.pop_back();
  slots_[slot] = req;
  const bool fixed = req.buf_index >= 0;
  if (req.op == IoRequest::Op::kRead) {
    if (fixed)
      io_uring_prep_read_fixed(sqe, req.fd, req.buf, req.len, req.offset, req.buf_index);
    else
      io_uring_prep_read(sqe, req.fd, req.buf, req.len, req.offset);
  } else {
    if (fixed)
      io_uring_prep_write_fixed(sqe, req.fd, req.buf, req.len, req.offset, req.buf_index);
    else
      io_uring_prep_write(sqe, req.fd, req.buf, req.len, req.offset);
  }
  io_uring_sqe_set_data64(sqe, slot);
  return 0;
}

int IoRing::submit() {
  int ret;
  do {
    ret = io_uring_submit(&ring_);
  } while (ret == -EINTR);
  return ret;
}

int IoRing::reap(unsigned wait_nr, const CompletionFn& fn) {
  int reaped = 0;
  while (true) {
    io_uring_cqe* cqe = nullptr;
    int ret = static_cast<unsigned>(reaped) < wait_nr ? io_uring_wait_cqe(&ring_, &cqe)
                                                      : io_uring_peek_cqe(&ring_, &cqe);
    if (ret == -EAGAIN) break;
    if (ret == -EINTR) continue;
    if (ret < 0) return ret;
    const auto slot = static_cast<uint32_t>(io_uring_cqe_get_data64(cqe));
    int res = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    const IoRequest req = slots_[slot];
    free_.push_back(slot);
    if (hook_) res = hook_(req, res);
    ++reaped;
    fn(req, res);
  }
  return reaped;
}

IoRequest io_remainder(const IoRequest& req, uint32_t done) {
  IoRequest rest = req;
  rest.buf = static_cast<char*>(req.buf) + done;
  rest.len = req.len - done;
  rest.offset = req.offset + done;
  return rest;
}

int IoRing::run(std::span<const IoRequest> reqs) {
  std::deque<IoRequest> pending(reqs.begin(), reqs.end());
  int first_error = 0;
  while (!pending.empty() || in_flight() > 0) {
    while (!pending.empty() && first_error == 0 && prepare(pending.front()) == 0)
      pending.pop_front();
    if (first_error != 0) pending.clear();
    int ret = submit();
    // -EAGAIN / -EBUSY: the kernel is short of resources or completions must be reaped
    // first; the queued requests stay in the ring and go with the next submit.
    if (ret < 0 && ret != -EAGAIN && ret != -EBUSY) return ret;
    if (in_flight() == 0) break;
    ret = reap(1, [&](const IoRequest& req, int res) {
      if (res < 0) {
        if (first_error == 0) first_error = res;
      } else if (static_cast<uint32_t>(res) < req.len) {
        if (res == 0) {
          if (first_error == 0) first_error = -EIO;
        } else {
          pending.push_front(io_remainder(req, static_cast<uint32_t>(res)));
        }
      }
    });
    if (ret < 0) return ret;
  }
  return first_error;
}

}  // namespace tempo
