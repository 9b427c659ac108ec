// The cluster tier on Ceph RADOS (librados C API): one pool per deployment, objects named
// "<prefix><16 hex digits of the key>", each written whole (write_full) together with its
// checksum in the xattr "tempo.xxh3" in one atomic operation, read with one compound
// operation (data straight into the caller's buffer, and the xattr) and verified.
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cluster/cluster_tier.h"

namespace tempo {

struct RadosTierOptions {
  std::string conf_path;                // ceph.conf ("" = librados' default search)
  std::string client = "client.admin";  // the cephx user
  std::string pool = "tempo";
  std::string prefix = "tempo/";  // object name prefix (a deployment's namespace)
  // Every monitor and OSD operation fails with -ETIMEDOUT after this many seconds instead of
  // waiting for the pool to come back (librados' default is to wait forever).
  double op_timeout_s = 5.0;
  // A put that fails because the pool does not answer (-ETIMEDOUT, -ENOTCONN, -ESHUTDOWN,
  // -EAGAIN) is kept, up to this many bytes of such puts, and issued again at the first
  // call after the pool answered an operation; past the bound the oldest are dropped and
  // counted (put_drops). 0: failed puts are not retried.
  uint64_t put_retry_bytes = 256ull << 20;
};

class RadosTier final : public ClusterTier {
 public:
  // Connects and opens the pool: 0, or a negative errno (-ENOENT: no such pool;
  // -ETIMEDOUT: no monitor answered within op_timeout_s) with `error` saying what failed.
  static int open(const RadosTierOptions& options, std::unique_ptr<RadosTier>* out,
                  std::string* error = nullptr);
  ~RadosTier() override;
  RadosTier(const RadosTier&) = delete;
  RadosTier& operator=(const RadosTier&) = delete;

  std::string describe() const override;
  int put_async(ObjectKey key, std::span<const std::byte> data) override;
  int flush(TimeNs timeout) override;
  int64_t stat(ObjectKey key) override;
  void stat_many(std::span<const ObjectKey> keys, std::span<int64_t> sizes) override;
  using ClusterTier::read_async;
  int read_async(ObjectKey key, std::span<const std::span<std::byte>> out, uint64_t tag) override;
  int completion_fd() const override { return event_fd_; }
  size_t reap(std::vector<ClusterRead>* out) override;
  int remove(ObjectKey key) override;
  ClusterTierStats stats() const override;

  std::string object_name(ObjectKey key) const;

 private:
  struct Handles;
  struct Pending;
  struct PutOp;
  struct ReadOp;
  explicit RadosTier(const RadosTierOptions& options);
  template <typename Operate>
  void issue(Pending* op, uint64_t ClusterTierStats::*in_flight, Operate operate);
  static void on_complete(void* completion, void* arg);
  void submit_put(ObjectKey key, std::vector<std::byte> data);
  void finish_put(PutOp* op, int status);
  void finish_read(ReadOp* op, int status);
  // The pool answered (`status` is not a sign that it is unreachable), or did not.
  void note_answer(int status);
  // Issues the kept puts again if the pool answered since they failed.
  void retry_puts();

  RadosTierOptions options_;
  std::unique_ptr<Handles> h_;
  int event_fd_ = -1;

  mutable std::mutex mu_;
  std::vector<ClusterRead> done_;  // guarded by mu_
  ClusterTierStats stats_;         // guarded by mu_
  int put_error_ = 0;              // first put error since the last flush; guarded by mu_
  struct Kept {
    ObjectKey key;
    std::vector<std::byte> data;
  };
  std::deque<Kept> kept_;      // failed puts, oldest first; guarded by mu_
  bool pool_answered_ = true;  // since the last sign it is unreachable; guarded by mu_
};

}  // namespace tempo
