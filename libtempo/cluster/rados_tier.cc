#include "cluster/rados_tier.h"

#include <rados/librados.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>

#include "core/clock.h"
#include "store/checksum.h"

namespace tempo {

namespace {

constexpr const char* kChecksumXattr = "tempo.xxh3";

TimeNs now_ns() { return MonotonicClock().now(); }

std::string errno_text(int err) { return std::strerror(err < 0 ? -err : err); }

// The errors that say the pool did not answer (rather than refused the operation).
bool unreachable(int status) {
  return status == -ETIMEDOUT || status == -ENOTCONN || status == -ESHUTDOWN || status == -EAGAIN;
}

}  // namespace

struct RadosTier::Handles {
  rados_t cluster = nullptr;
  rados_ioctx_t io = nullptr;
  std::condition_variable drained;  // notified (under mu_) when an operation in flight ends
};

// An operation in flight: librados' completion callback hands it back to its tier.
struct RadosTier::Pending {
  explicit Pending(RadosTier* t) : tier(t) {}
  virtual ~Pending() = default;
  virtual void finish(int status) = 0;
  RadosTier* tier;
};

struct RadosTier::PutOp final : Pending {
  PutOp(RadosTier* t, ObjectKey k, std::vector<std::byte> d)
      : Pending(t), key(k), data(std::move(d)) {}
  void finish(int status) override { tier->finish_put(this, status); }
  rados_write_op_t op = rados_create_write_op();
  ObjectKey key;
  std::vector<std::byte> data;  // kept for a retry
};

struct RadosTier::ReadOp final : Pending {
  using Pending::Pending;
  void finish(int status) override { tier->finish_read(this, status); }
  rados_read_op_t op = rados_create_read_op();
  ObjectKey key = 0;
  std::vector<std::span<std::byte>> out;  // the caller's pieces, in object order
  uint64_t tag = 0;
  TimeNs submitted = 0;
  std::vector<size_t> bytes_read;  // per piece
  std::vector<int> read_rval;      // per piece
  int xattr_rval = 0;
  uint64_t size = 0;
  time_t mtime = 0;
  int stat_rval = 0;
  rados_xattrs_iter_t xattrs = nullptr;
};

RadosTier::RadosTier(const RadosTierOptions& options)
    : options_(options), h_(std::make_unique<Handles>()) {}

int RadosTier::open(const RadosTierOptions& options, std::unique_ptr<RadosTier>* out,
                    std::string* error) {
  auto fail = [&](int err, const std::string& what) {
    if (error) *error = what + ": " + errno_text(err);
    return err < 0 ? err : -err;
  };
  if (options.pool.empty() || !(options.op_timeout_s > 0)) return fail(-EINVAL, "options");
  std::unique_ptr<RadosTier> tier(new RadosTier(options));
  Handles& h = *tier->h_;
  int r = rados_create2(&h.cluster, "ceph", options.client.c_str(), 0);
  if (r < 0) {
    h.cluster = nullptr;
    return fail(r, "rados_create2(" + options.client + ")");
  }
  r = rados_conf_read_file(h.cluster,
                           options.conf_path.empty() ? nullptr : options.conf_path.c_str());
  if (r < 0) return fail(r, "reading " + options.conf_path);
  char timeout[32];
  std::snprintf(timeout, sizeof timeout, "%g", options.op_timeout_s);
  for (const char* key : {"rados_osd_op_timeout", "rados_mon_op_timeout", "client_mount_timeout"}) {
    r = rados_conf_set(h.cluster, key, timeout);
    if (r < 0) return fail(r, std::string("setting ") + key);
  }
  r = rados_connect(h.cluster);
  if (r < 0) return fail(r, "connecting to the cluster");
  r = rados_ioctx_create(h.cluster, options.pool.c_str(), &h.io);
  if (r < 0) {
    h.io = nullptr;
    return fail(r, "opening pool '" + options.pool + "'");
  }
  tier->event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (tier->event_fd_ < 0) return fail(-errno, "eventfd");
  *out = std::move(tier);
  return 0;
}

RadosTier::~RadosTier() {
  if (h_->io) {
    {
      // Callbacks still to run reference this tier: wait for them (each is bounded by
      // op_timeout_s).
      std::unique_lock lock(mu_);
      h_->drained.wait(lock, [&] { return stats_.puts_in_flight + stats_.reads_in_flight == 0; });
    }
    rados_ioctx_destroy(h_->io);
  }
  if (h_->cluster) rados_shutdown(h_->cluster);
  if (event_fd_ >= 0) close(event_fd_);
}

std::string RadosTier::describe() const { return "rados:" + options_.pool; }

std::string RadosTier::object_name(ObjectKey key) const {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(key));
  return options_.prefix + hex;
}

int RadosTier::put_async(ObjectKey key, std::span<const std::byte> data) {
  if (data.empty()) return -EINVAL;
  retry_puts();
  submit_put(key, std::vector<std::byte>(data.begin(), data.end()));
  return 0;
}

void RadosTier::submit_put(ObjectKey key, std::vector<std::byte> data) {
  const uint64_t sum = checksum64(data.data(), data.size());
  auto* put = new PutOp(this, key, std::move(data));
  const std::vector<std::byte>& d = put->data;
  rados_write_op_write_full(put->op, reinterpret_cast<const char*>(d.data()), d.size());
  rados_write_op_setxattr(put->op, kChecksumXattr, reinterpret_cast<const char*>(&sum), sizeof sum);
  issue(put, &ClusterTierStats::puts_in_flight, [&](rados_completion_t c) {
    return rados_aio_write_op_operate(put->op, h_->io, c, object_name(key).c_str(), nullptr, 0);
  });
}

void RadosTier::note_answer(int status) {
  std::lock_guard lock(mu_);
  pool_answered_ = !unreachable(status);
}

void RadosTier::retry_puts() {
  std::deque<Kept> again;
  {
    std::lock_guard lock(mu_);
    if (!pool_answered_ || kept_.empty()) return;
    again.swap(kept_);
    stats_.put_retries += again.size();
    stats_.puts_queued = 0;
    stats_.put_queued_bytes = 0;
  }
  for (Kept& k : again) submit_put(k.key, std::move(k.data));
}

template <typename Operate>
void RadosTier::issue(Pending* op, uint64_t ClusterTierStats::*in_flight, Operate operate) {
  {
    std::lock_guard lock(mu_);
    stats_.*in_flight += 1;
  }
  rados_completion_t c = nullptr;
  int r = rados_aio_create_completion2(op, &RadosTier::on_complete, &c);
  if (r == 0) {
    r = operate(c);
    if (r == 0) return;
    rados_aio_release(c);
  }
  op->finish(r);  // not submitted: finished at once with the error
}

void RadosTier::on_complete(void* completion, void* arg) {
  const int r = rados_aio_get_return_value(static_cast<rados_completion_t>(completion));
  rados_aio_release(static_cast<rados_completion_t>(completion));
  static_cast<Pending*>(arg)->finish(r);
}

void RadosTier::finish_put(PutOp* put, int status) {
  rados_release_write_op(put->op);
  {
    std::lock_guard lock(mu_);
    stats_.puts_in_flight--;
    pool_answered_ = !unreachable(status);
    if (status < 0) {
      stats_.put_errors++;
      if (put_error_ == 0) put_error_ = status;
    } else {
      stats_.puts++;
      stats_.put_bytes += put->data.size();
    }
    if (unreachable(status) && options_.put_retry_bytes > 0) {
      stats_.puts_queued++;
      stats_.put_queued_bytes += put->data.size();
      kept_.push_back({put->key, std::move(put->data)});
      while (stats_.put_queued_bytes > options_.put_retry_bytes) {
        stats_.puts_queued--;
        stats_.put_queued_bytes -= kept_.front().data.size();
        stats_.put_drops++;
        kept_.pop_front();
      }
    }
    h_->drained.notify_all();
  }
  delete put;
}

int RadosTier::flush(TimeNs timeout) {
  retry_puts();
  std::unique_lock lock(mu_);
  const auto deadline = timeout == kNever
                            ? std::chrono::steady_clock::time_point::max()
                            : std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout);
  while (stats_.puts_in_flight > 0) {
    if (h_->drained.wait_until(lock, deadline) == std::cv_status::timeout &&
        stats_.puts_in_flight > 0)
      return -ETIMEDOUT;
  }
  const int r = put_error_;
  put_error_ = 0;
  return r;
}

int64_t RadosTier::stat(ObjectKey key) {
  retry_puts();
  uint64_t size = 0;
  time_t mtime = 0;
  const int r = rados_stat(h_->io, object_name(key).c_str(), &size, &mtime);
  note_answer(r);
  return r < 0 ? r : static_cast<int64_t>(size);
}

void RadosTier::stat_many(std::span<const ObjectKey> keys, std::span<int64_t> sizes) {
  retry_puts();
  // Every stat issued before any is waited for: they time out together.
  std::vector<rados_completion_t> done(keys.size(), nullptr);
  std::vector<uint64_t> size(keys.size());
  std::vector<time_t> mtime(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    int r = rados_aio_create_completion2(nullptr, nullptr, &done[i]);
    if (r == 0) {
      r = rados_aio_stat(h_->io, object_name(keys[i]).c_str(), done[i], &size[i], &mtime[i]);
      if (r == 0) continue;
      rados_aio_release(done[i]);
    }
    done[i] = nullptr;
    sizes[i] = r;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!done[i]) continue;
    rados_aio_wait_for_complete(done[i]);
    const int r = rados_aio_get_return_value(done[i]);
    rados_aio_release(done[i]);
    note_answer(r);
    sizes[i] = r < 0 ? r : static_cast<int64_t>(size[i]);
  }
}

int RadosTier::read_async(ObjectKey key, std::span<const std::span<std::byte>> out, uint64_t tag) {
  uint64_t total = 0;
  for (const auto& piece : out) total += piece.size();
  if (total == 0) return -EINVAL;
  retry_puts();
  auto* read = new ReadOp(this);
  read->key = key;
  read->out.assign(out.begin(), out.end());
  read->bytes_read.resize(out.size());
  read->read_rval.resize(out.size());
  read->tag = tag;
  read->submitted = now_ns();
  // One compound operation: the object's size (a longer object than the manifest says is
  // an error, not a silent truncation), its bytes straight into the pieces, and its checksum.
  rados_read_op_stat(read->op, &read->size, &read->mtime, &read->stat_rval);
  uint64_t offset = 0;
  for (size_t i = 0; i < read->out.size(); ++i) {
    rados_read_op_read(read->op, offset, read->out[i].size(),
                       reinterpret_cast<char*>(read->out[i].data()), &read->bytes_read[i],
                       &read->read_rval[i]);
    offset += read->out[i].size();
  }
  rados_read_op_getxattrs(read->op, &read->xattrs, &read->xattr_rval);
  issue(read, &ClusterTierStats::reads_in_flight, [&](rados_completion_t c) {
    return rados_aio_read_op_operate(read->op, h_->io, c, object_name(key).c_str(), 0);
  });
  return 0;
}

void RadosTier::finish_read(ReadOp* read, int status) {
  int64_t result = status;
  for (int r : {read->stat_rval, read->xattr_rval})
    if (result >= 0 && r < 0) result = r;
  uint64_t wanted = 0;
  bool whole = true;  // every piece filled
  for (size_t i = 0; i < read->out.size(); ++i) {
    if (result >= 0 && read->read_rval[i] < 0) result = read->read_rval[i];
    wanted += read->out[i].size();
    whole = whole && read->bytes_read[i] == read->out[i].size();
  }
  uint64_t stored_sum = 0;
  bool have_sum = false;
  if (result >= 0 && read->xattrs) {
    const char* name = nullptr;
    const char* value = nullptr;
    size_t len = 0;
    while (rados_getxattrs_next(read->xattrs, &name, &value, &len) == 0 && name) {
      if (std::strcmp(name, kChecksumXattr) == 0 && len == sizeof stored_sum) {
        std::memcpy(&stored_sum, value, sizeof stored_sum);
        have_sum = true;
      }
    }
  }
  if (read->xattrs) rados_getxattrs_end(read->xattrs);
  if (result >= 0) {
    if (read->size != wanted || !whole) {
      result = -EMSGSIZE;  // the caller's manifest does not match the pool's object
    } else if (!have_sum) {
      result = -EBADMSG;  // not written by a RadosTier (or its xattr was lost)
    } else {
      Checksum64Stream sum;
      for (const auto& piece : read->out) sum.update(piece.data(), piece.size());
      result = sum.digest() == stored_sum ? static_cast<int64_t>(wanted) : -EBADMSG;
    }
  }
  rados_release_read_op(read->op);
  {
    std::lock_guard lock(mu_);
    pool_answered_ = !unreachable(status);
    stats_.reads_in_flight--;
    if (result < 0) {
      stats_.read_errors++;
    } else {
      stats_.reads++;
      stats_.read_bytes += static_cast<uint64_t>(result);
    }
    done_.push_back({read->tag, read->key, result, read->submitted, now_ns()});
    // Under mu_: once the count reaches zero the destructor may close the eventfd.
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = write(event_fd_, &one, sizeof one);
    h_->drained.notify_all();
  }
  delete read;
}

size_t RadosTier::reap(std::vector<ClusterRead>* out) {
  uint64_t count = 0;
  [[maybe_unused]] const ssize_t n = read(event_fd_, &count, sizeof count);
  std::lock_guard lock(mu_);
  const size_t taken = done_.size();
  out->insert(out->end(), done_.begin(), done_.end());
  done_.clear();
  return taken;
}

int RadosTier::remove(ObjectKey key) { return rados_remove(h_->io, object_name(key).c_str()); }

ClusterTierStats RadosTier::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace tempo
