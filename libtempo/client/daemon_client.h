// Client mode of libtempo.so (device = daemon): the C ABI's operations as tempod protocol
// requests (client/tempod_proto.h) over one SOCK_SEQPACKET connection. Thread-safe: any
// number of threads call at once; each request carries its own sequence number and one
// caller at a time reads the socket for all of them. The fast tier's memory arrives once
// (SCM_RIGHTS) and is mapped read-only, so extents are read in place.
//
// When the daemon goes away, the call that finds out returns -ECONNRESET; the next call
// connects again (a new connection: the old one's claims were cancelled by the daemon,
// their ids answer -ENOENT), or returns the connect's error (-ECONNREFUSED, -ENOENT).
// A connect and its HELLO take at most the connect timeout together: a daemon that is
// stuck (stopped, or its listener full) gives -ETIMEDOUT, one that refuses the connection
// its reason (-EBUSY at daemon.max_connections, -EMFILE out of descriptors).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "client/tempod_proto.h"
#include "core/time.h"
#include "runtime/ttu_quantiles.h"
#include "tempo/tempo.h"

namespace tempo {

class DaemonClient {
 public:
  // How long a connect and its HELLO may take (Documentation/tempod.md).
  static constexpr TimeNs kConnectTimeout = 5 * kNsPerSec;
  // Connects to the daemon at `socket` as `engine` ("" names the engine by its pid), within
  // `timeout` (positive); reconnects take as long. 0, or -errno with `error` naming the
  // socket and what failed.
  static int connect(const std::string& socket, const std::string& engine,
                     std::unique_ptr<DaemonClient>* out, std::string* error,
                     TimeNs timeout = kConnectTimeout);
  ~DaemonClient();
  DaemonClient(const DaemonClient&) = delete;
  DaemonClient& operator=(const DaemonClient&) = delete;

  // The daemon's device ("uring") as the first connection found it; stable storage for
  // tempo_ctx_device().
  const char* device() const { return device_; }
  // Whether the daemon's policy reads TTU spreads (TEMPOD_F_TTU_SPREAD at the last connect).
  bool reads_spread() const { return reads_spread_.load(std::memory_order_relaxed); }

  // The C ABI's operations (include/tempo/tempo.h), same arguments and return codes, plus
  // -ECONNRESET (daemon gone) and -E2BIG (more objects, ids or extents than a message holds).
  int now(int64_t* ns);
  int tick();
  int stats(tempo_counters* s);
  int report(const tempo_object* objects, size_t count, int64_t ttu_ns, tempo_claim_id* id);
  int revise(tempo_claim_id id, int64_t ttu_ns);
  int set_layers(tempo_claim_id id, uint32_t groups, int64_t per_group_ns);
  int order(const tempo_claim_id* ids, size_t count);
  int request_retrieval(tempo_claim_id id, int* outcome);
  int query(tempo_claim_id id, tempo_claim_info* info);
  int transfer_begin(tempo_claim_id id);
  int transfer_end(tempo_claim_id id);
  int cancel(tempo_claim_id id);
  int wait_ready(tempo_claim_id id, int64_t timeout_ns, int* outcome);
  int extents(tempo_claim_id id, tempo_extent* out, size_t capacity, size_t* count);
  int ordinary_read(tempo_claim_id id);
  int store_put(uint64_t key, const void* data, size_t bytes);
  int store_lookup(const uint64_t* keys, size_t count, size_t* prefix);
  int store_delete(uint64_t key);
  int kmod_add_objects(const tempo_kmod_object* objects, size_t count);
  // The fast tier's memory as mapped here (read-only). -EOPNOTSUPP when none was passed,
  // and on kmod (whose device range is mapped for the extents, not a fast tier).
  int fast_tier(void** base, uint64_t* bytes);

  // One operation of a batch (TEMPOD_OP_BATCH): REPORT (arg = TTU, objects), REVISE (arg =
  // TTU), REVISE_SPREAD (arg = TTU, spread), CANCEL, RETRIEVAL, TRANSFER_BEGIN or
  // TRANSFER_END of claim `id`.
  struct BatchOp {
    uint16_t op;
    tempo_claim_id id;
    int64_t arg;
    std::span<const tempo_object> objects;
    const tempo::TtuQuantiles* spread = nullptr;  // REVISE_SPREAD's
  };
  struct BatchResult {
    int status;     // as the single call would return
    int64_t value;  // REPORT: the claim id; RETRIEVAL: the outcome
  };
  // Runs the operations in order, as few messages as they fit in; results[i] is ops[i]'s.
  // 0, or the message's error (-EINVAL malformed: none of that message ran; -ECONNRESET).
  int batch(std::span<const BatchOp> ops, std::vector<BatchResult>* results);

  // Labels claim `id` with the engine's request id (at most 39 bytes), for listings.
  int label(tempo_claim_id id, const std::string& request);
  struct ClaimEntry {
    tempo_claim_id id;
    tempo_claim_info info;
    std::string engine;   // the owning engine
    uint32_t client;      // the connection that reported it
    std::string request;  // its label, "" none
  };
  // Up to `max` claims with ids above `after`, in id order (every engine's: for tempoctl).
  int claims(tempo_claim_id after, uint32_t max, std::vector<ClaimEntry>* out);

  // The live store through the daemon (tempoctl store --daemon): every object (or every
  // quarantined one) in key order; a verification of every object; a garbage collection.
  int store_list(bool quarantined, std::vector<tempod_store_object>* out);
  int store_verify(tempod_store_verified* summary, std::vector<tempod_store_object>* bad);
  int store_gc(tempod_store_gc_reply* out);
  // Retrievals on time and late, the commit margin histogram.
  int timeliness(tempod_timeliness* out);

 private:
  struct Reply {
    std::vector<std::byte> bytes;
  };
  struct Mapping {
    void* addr;
    size_t bytes;
  };
  DaemonClient() = default;
  // Connects and says HELLO; maps the fast tier. Holding mu_, no reader active.
  int connect_locked(std::string* error);
  void drop_connection_locked();
  // Sends `req` (its header's seq is set here) with `pass_fd`, waits for its reply.
  // The reply's status, or -ECONNRESET; the reply's bytes in *reply when given.
  int call(void* req, size_t len, std::vector<std::byte>* reply = nullptr, int pass_fd = -1);
  // Sends the fixed part `head` (its length set here) followed by `bytes` of `items`: a
  // request with a counted tail (REPORT, ORDER, STORE_LOOKUP, KMOD_ADD_OBJECTS).
  template <typename Head>
  int call_counted(Head* head, const void* items, size_t bytes,
                   std::vector<std::byte>* reply = nullptr);
  int claim_op(uint16_t op, tempo_claim_id id, int64_t arg, int64_t* value = nullptr);
  // A request of a bare header whose reply is exactly `size` bytes, copied to `out`.
  int header_only(uint16_t op, void* out, size_t size);

  std::string socket_;
  std::string engine_;
  TimeNs timeout_ = kConnectTimeout;
  char device_[17] = {};
  std::atomic<bool> reads_spread_{false};

  std::mutex send_mu_;  // one sender at a time; taken after mu_ when both are held
  std::mutex mu_;
  std::condition_variable cv_;
  int sock_ = -1;            // guarded by mu_ (and send_mu_ for changes)
  uint64_t connection_ = 0;  // guarded by mu_ (and send_mu_ for changes): bumped per connect
  bool reading_ = false;     // guarded by mu_: one caller reads the socket for everyone
  // What the reading caller receives into (it alone, while reading_): one message's room,
  // allocated once rather than a zeroed 64 KiB per reply.
  std::vector<std::byte> rx_;
  uint64_t next_seq_ = 1;                 // guarded by mu_
  std::map<uint64_t, Reply> replies_;     // guarded by mu_: arrived, not yet taken
  const std::byte* fast_tier_ = nullptr;  // guarded by mu_: the current mapping
  uint64_t fast_tier_bytes_ = 0;          // guarded by mu_: its size
  bool device_map_ = false;               // guarded by mu_: it is the kmod device's range
  std::vector<Mapping> mappings_;         // every mapping made: extents may still point there
};

}  // namespace tempo
