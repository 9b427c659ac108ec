// tempod's protocol server (libtempo/client/tempod_proto.h) over one Context on the
// threaded driver. Everything but store puts runs on the driver's loop thread, where the
// stack runs: the listening socket, the connections and a deadline timer sit in one epoll
// set the driver watches, so a request is answered without a thread hop.
//
// Claims belong to the connection that reported them: other connections get -ENOENT for
// them, and when a connection closes (the client exited or was killed) its live claims are
// cancelled and its transfers ended, so their protected bytes return to the budget.
// Sends never block: replies a client does not read wait in its queue (at most
// max_queued); while the queue is full the daemon stops reading that client's requests,
// and no other client notices. WAIT_READY answers at the claim's readiness or its own
// deadline. Store puts run on one worker thread (the loop never waits for the disk).
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
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "stack/context.h"

namespace tempo {

struct ServerOptions {
  std::string socket = "/run/tempo/tempod.sock";
  mode_t mode = 0660;       // the socket's permissions
  gid_t group = gid_t(-1);  // the socket's group (and a peer with it is admitted); -1 keeps ours
  size_t max_queued = 256;  // replies waiting for a client before its requests are not read
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
  struct Conn {
    int fd = -1;
    uint32_t id = 0;
    pid_t pid = 0;
    uid_t uid = 0;
    bool admitted = false;  // SO_PEERCRED check passed
    bool hello = false;
    bool reading = true;
    bool broken = false;  // a malformed packet or a failed HELLO reply: close it
    std::string engine;
    std::unordered_set<ClaimId> claims;  // reported here; erased ones pruned now and then
    size_t claims_after_prune = 0;
    std::vector<ClaimId> order;  // its waiting queue, merged into the stack's
    std::deque<std::vector<std::byte>> out;
  };
  struct Waiter {
    uint32_t conn;
    uint64_t seq;
    ClaimId id;
    TimeNs deadline;
  };
  struct Put {
    uint32_t conn;
    uint64_t seq;
    ObjectKey key;
    uint64_t bytes;
    int fd;
  };

  Server(Context& ctx, ServerOptions options) : ctx_(ctx), options_(std::move(options)) {}
  void on_events();
  void accept_all();
  void on_readable(Conn& c);
  bool on_writable(Conn& c);  // false when it closed the connection
  // Handles one request; the reply is queued (or, for waits and reads, later). Sets
  // c.broken when the connection must close (the caller closes it).
  void handle(Conn& c, const std::byte* msg, size_t len, int fd);
  void reply(Conn& c, std::vector<std::byte> msg);
  void reply_status(Conn& c, uint16_t op, uint64_t seq, int status);
  void reply_value(Conn& c, uint16_t op, uint64_t seq, int status, int64_t value);
  void update_interest(Conn& c);
  void close_conn(Conn& c);
  Conn* find(uint32_t id);
  int merge_orders(Stack& s);
  void check_waiters(Stack& s);
  void arm_deadline();
  void put_worker();
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
  uint32_t next_conn_ = 1;
  std::list<Waiter> waiters_;
  Stack* stack_ = nullptr;                                      // set on the loop thread at start
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // false once stopping
  // The fast tier's memory as clients map it (the uring device's shareable region).
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
