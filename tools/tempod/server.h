// tempod's protocol server (libtempo/client/tempod_proto.h) over one Context on the
// threaded driver. Everything but the store's operations runs on the driver's loop thread,
// where the stack runs: the listening socket, the connections and a deadline timer sit in
// one epoll set the driver watches, so a request is answered without a thread hop.
//
// Claims belong to the engine that reported them: the connections that gave one engine
// name at HELLO (a scheduler and its workers), or one connection without a name. Other
// engines get -ENOENT for them. When a connection closes (the client exited or was
// killed) the transfers it began are ended; when it was its engine's last, the engine's
// live claims are cancelled, so their protected bytes return to the budget. Each engine
// has a share group in the controller (Controller::set_share, daemon.shares).
// Sends never block: replies a client does not read wait in its queue; while those and
// its requests still to be answered (waits, store operations) reach max_queued, the
// daemon stops reading that client's requests, and no other client notices. WAIT_READY answers at
// the claim's readiness or its own deadline. Store puts, deletes, listings, verification and
// collection run on one worker thread, in order (the loop never waits for the disk).
// The optional metrics listener (HTTP on a loopback address) runs on the loop too, never
// blocking it: non-blocking sockets, at most kMetricsConns connections, each one request of
// at most 4 KiB and one reply, closed after it or at its deadline (slow or silent peers).
// Against a flood of connections: beyond max_connections a new one gets a HELLO reply of
// -EBUSY at accept and is closed; one that has not said HELLO by hello_timeout after its
// accept is closed; out of descriptors (EMFILE, ENFILE) a spare one takes the queued
// connections off the listener, each told -EMFILE, and the listener rests for
// kAcceptBackoff instead of waking the loop again at once (the spin it was).
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "client/tempod_proto.h"
#include "runtime/ttu_quantiles.h"
#include "stack/context.h"
#include "tempo/tempo.h"

namespace tempo {

class KmodDevice;

struct ServerOptions {
  std::string socket = "/run/tempo/tempod.sock";
  mode_t mode = 0660;       // the socket's permissions
  gid_t group = gid_t(-1);  // the socket's group (and a peer with it is admitted); -1 keeps ours
  // Replies waiting for a client, and its requests to be answered later (waits, store
  // operations), before its requests are not read.
  size_t max_queued = 256;
  // The largest object one STORE_PUT may hand over (daemon.max_put_bytes); larger: -EFBIG.
  uint64_t max_put_bytes = uint64_t{1} << 30;
  // The HTTP metrics listener (daemon.metrics_listen): a loopback address in network order
  // and a port; port 0 is off.
  uint32_t metrics_addr = 0;
  uint16_t metrics_port = 0;
  // Protected-capacity share weights by engine name (daemon.shares), and the others'.
  std::map<std::string, uint32_t> shares;
  uint32_t default_share = 1;
  // Connections at once (daemon.max_connections); more are refused with -EBUSY.
  size_t max_connections = 512;
  // How long a connection may take to say HELLO (daemon.hello_timeout).
  TimeNs hello_timeout = 5 * kNsPerSec;
  // Where connection events go (syslog priority, message); on the loop thread.
  std::function<void(int, const std::string&)> log = [](int, const std::string&) {};
};

class Server final : private StackObserver {
 public:
  // Binds the socket (a stale one is replaced, -EADDRINUSE if served) and serves `ctx`.
  static int start(Context& ctx, const ServerOptions& options, std::unique_ptr<Server>* out,
                   std::string* error);
  // Stops serving: closes every connection (cancelling their claims) and the socket.
  ~Server() override;
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Connections open now (any thread).
  size_t connections();

 private:
  // An engine: every connection that said HELLO with its name (a scheduler and its workers
  // are one engine in several processes). Its claims are shared by its connections and
  // cancelled when the last one closes.
  struct Engine {
    std::string name;
    uint32_t group = 0;  // its share group in the controller
    size_t conns = 0;
    std::vector<ClaimId> order;  // its waiting queue, merged into the stack's
  };
  // Who a claim belongs to, kept while the stack holds the claim.
  struct Owner {
    std::shared_ptr<Engine> engine;
    uint32_t conn = 0;  // the connection that reported it
  };
  struct Conn {
    int fd = -1;
    uint32_t id = 0;
    pid_t pid = 0;
    uid_t uid = 0;
    bool admitted = false;  // SO_PEERCRED check passed
    bool reading = true;
    bool broken = false;                    // a malformed packet or a failed HELLO reply: close it
    std::shared_ptr<Engine> engine;         // set by HELLO
    std::unordered_set<ClaimId> transfers;  // transfers this connection began
    std::deque<std::vector<std::byte>> out;
    size_t pending = 0;  // its requests answered later: waits and store operations
  };
  struct Waiter {
    uint32_t conn;
    uint64_t seq;
    ClaimId id;
    TimeNs deadline;
  };
  // A store operation for the put thread: STORE_PUT (fd holds the bytes), STORE_DELETE,
  // STORE_LIST, STORE_VERIFY or STORE_GC.
  struct Put {
    uint16_t op;
    uint32_t conn;
    uint64_t seq;
    ObjectKey key;
    uint64_t bytes;
    int fd;
    tempod_store_list list;  // STORE_LIST's request
  };

  Server(Context& ctx, ServerOptions options) : ctx_(ctx), options_(std::move(options)) {}
  void on_events();
  void accept_all();
  // Answers HELLO's reply with `status` (and, for -EBUSY, the limit) unasked and closes fd.
  void refuse(int fd, int status);
  // accept failed with `err`: out of descriptors, refuses what is queued on the spare
  // one; then stops watching the listener for kAcceptBackoff.
  void accept_failed(int err);
  // Closes the connections past their HELLO deadline; watches the listener again after
  // its backoff.
  void expire_hellos();
  void on_readable(Conn& c);
  bool on_writable(Conn& c);  // false when it closed the connection
  // Handles one request; the reply is queued (or, for waits and reads, later). Sets
  // c.broken when the connection must close (the caller closes it).
  void handle(Conn& c, const std::byte* msg, size_t len, int fd);
  // One claim operation of connection c (REPORT with `objects`, REVISE, CANCEL, RETRIEVAL,
  // TRANSFER_BEGIN, TRANSFER_END), alone or in a BATCH: its status, and in *value REPORT's
  // id or RETRIEVAL's outcome.
  // REVISE_SPREAD's distribution is `spread`.
  int claim_op(Conn& c, uint16_t op, ClaimId id, int64_t arg, std::span<const tempo_object> objects,
               int64_t* value, const TtuQuantiles* spread = nullptr);
  void handle_batch(Conn& c, const std::byte* msg, size_t len, uint64_t seq);
  void handle_claims(Conn& c, const std::byte* msg, size_t len, uint64_t seq);
  void hello(Conn& c, const std::byte* msg, size_t len, uint64_t seq);
  // Whether claim `id` belongs to c's engine.
  bool owns(const Conn& c, ClaimId id) const;
  // Forgets owners of claims the stack erased, when their number has doubled.
  void prune_owners(Stack& s);
  // The engine's last connection closed: cancels its live claims (returns how many) and
  // forgets it.
  size_t engine_gone(Engine& e);
  uint32_t share_of(const std::string& engine) const;
  void reply(Conn& c, std::vector<std::byte> msg);
  void reply_status(Conn& c, uint16_t op, uint64_t seq, int status);
  void reply_value(Conn& c, uint16_t op, uint64_t seq, int status, int64_t value);
  // Whether c's requests are read: its unread replies and the requests it waits on
  // (pending) are below max_queued, and it was not refused.
  bool reads(const Conn& c) const;
  void update_interest(Conn& c);
  void close_conn(Conn& c);
  Conn* find(uint32_t id);
  int merge_orders(Stack& s);
  void check_waiters(Stack& s);
  void arm_deadline();
  // The metrics listener: a connection to accept, one with something to read or write, and
  // those past their deadline (closed).
  struct MetricsConn {
    int fd = -1;
    std::string in;
    std::string out;
    TimeNs deadline = 0;
  };
  void accept_metrics();
  void on_metrics(uint64_t tag, uint32_t events);
  void close_metrics(uint64_t tag);
  void expire_metrics();
  std::string metrics_reply(const std::string& request);
  void put_worker();
  // Runs one store operation on the put thread; its reply.
  std::vector<std::byte> store_op(const Put& p);
  // StackObserver: readiness changed somewhere.
  void on_claim_ready(ClaimId) override;
  void on_claim_ordinary(ClaimId) override;

  Context& ctx_;
  ServerOptions options_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int timer_fd_ = -1;
  // Loop thread only:
  std::map<uint32_t, std::unique_ptr<Conn>> conns_;  // by id
  std::vector<std::byte> rx_;  // what on_readable receives into, one message's room, kept
  uint32_t next_conn_ = 1;
  std::map<std::string, std::shared_ptr<Engine>> engines_;  // with a connection, by name
  uint32_t next_group_ = 1;
  std::unordered_map<ClaimId, Owner> owners_;
  size_t owners_after_prune_ = 0;
  std::list<Waiter> waiters_;
  // Connections not known to have said HELLO, by deadline (accept order: one timeout).
  std::deque<std::pair<TimeNs, uint32_t>> hello_due_;
  int spare_fd_ = -1;              // given up to accept when out of descriptors
  TimeNs accept_resume_ = kNever;  // while backing off: when to watch the listener again
  bool full_logged_ = false;       // the cap or the descriptor limit was logged (once per episode)
  int metrics_fd_ = -1;
  uint64_t next_metrics_ = 0;
  std::map<uint64_t, MetricsConn> metrics_;                     // by epoll tag
  Stack* stack_ = nullptr;                                      // set on the loop thread at start
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // false once stopping
  // The fast tier's memory as clients map it: the uring device's shareable region (its fd),
  // or the kmod device's logical range (a read-only fd opened per client).
  KmodDevice* kmod_ = nullptr;
  int region_fd_ = -1;
  const std::byte* region_base_ = nullptr;
  uint64_t region_bytes_ = 0;
  uint64_t region_align_ = 0;

  std::mutex mu_;
  std::condition_variable put_ready_;
  std::deque<Put> puts_;   // guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  size_t open_conns_ = 0;  // guarded by mu_
  std::thread put_thread_;
};

}  // namespace tempo
