#include "server.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "client/tempod_proto.h"
#include "client/wire.h"
#include "uring/uring_device.h"

namespace tempo {
namespace {

constexpr int kBurst = 32;  // requests read from one client per wakeup (fairness)
// epoll tags besides connection ids (which count up from 1).
constexpr uint64_t kListenTag = ~uint64_t{0};
constexpr uint64_t kTimerTag = ~uint64_t{0} - 1;

template <typename T>
std::vector<std::byte> make_reply(uint16_t op, uint64_t seq, int status, size_t extra = 0) {
  std::vector<std::byte> buf(sizeof(T) + extra);
  tempod_hdr h{};
  h.op = static_cast<uint16_t>(op | TEMPOD_OP_REPLY);
  h.version = TEMPOD_PROTO_VERSION;
  h.len = static_cast<uint32_t>(buf.size());
  h.seq = seq;
  h.status = status;
  std::memcpy(buf.data(), &h, sizeof(h));
  return buf;
}

template <typename T>
T* body(std::vector<std::byte>& buf) {
  return reinterpret_cast<T*>(buf.data());
}

bool ended(ClaimState s) {
  return s == ClaimState::kReleased || s == ClaimState::kCancelled || s == ClaimState::kFailed;
}

int bind_socket(const std::string& path, int* out, std::string* error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    *error = "socket path '" + path + "' must be 1 to 107 characters";
    return -EINVAL;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      *error = "'" + path + "' exists and is not a socket";
      return -EEXIST;
    }
    const int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    const bool served = connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    close(probe);
    if (served) {
      *error = "'" + path + "' is served by another tempod";
      return -EADDRINUSE;
    }
    unlink(path.c_str());
  }
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 128) != 0) {
    const int err = errno;
    if (fd >= 0) close(fd);
    *error = "'" + path + "': " + std::strerror(err);
    return -err;
  }
  *out = fd;
  return 0;
}

}  // namespace

int Server::start(Context& ctx, const ServerOptions& options, std::unique_ptr<Server>* out,
                  std::string* error) {
  std::unique_ptr<Server> s(new Server(ctx, options));
  if (const int r = bind_socket(options.socket, &s->listen_fd_, error); r != 0) return r;
  if (chmod(options.socket.c_str(), options.mode) != 0 ||
      (options.group != gid_t(-1) &&
       chown(options.socket.c_str(), uid_t(-1), options.group) != 0)) {
    const int err = errno;
    *error = "'" + options.socket + "': permissions: " + std::strerror(err);
    return -err;
  }
  s->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  s->timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  for (auto [fd, tag] :
       {std::pair{s->listen_fd_, kListenTag}, std::pair{s->timer_fd_, kTimerTag}}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = tag;
    if (s->epoll_fd_ < 0 || fd < 0 || epoll_ctl(s->epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      *error = std::string("tempod event descriptors: ") + std::strerror(errno);
      return -errno;
    }
  }
  Server* self = s.get();
  ctx.call([self](Stack& st) {
    self->stack_ = &st;
    st.set_observer(self);
    if (auto* uring = dynamic_cast<UringDevice*>(&st.device());
        uring && uring->region().fd() >= 0) {
      self->region_fd_ = uring->region().fd();
      self->region_base_ = uring->region().base();
      self->region_bytes_ = uring->region().size();
      self->region_align_ = uring->region().alignment();
    }
  });
  s->put_thread_ = std::thread([self] { self->put_worker(); });
  if (const int r = ctx.watch(s->epoll_fd_, [self] { self->on_events(); }); r != 0) {
    *error = "tempod needs the threaded driver (device = uring)";
    return r;
  }
  *out = std::move(s);
  return 0;
}

Server::~Server() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  put_ready_.notify_all();
  if (put_thread_.joinable()) put_thread_.join();
  if (epoll_fd_ >= 0) ctx_.unwatch(epoll_fd_);
  ctx_.call([this](Stack& st) {
    *alive_ = false;
    while (!conns_.empty()) close_conn(*conns_.begin()->second);
    if (stack_) st.set_observer(nullptr);
  });
  for (const Put& p : puts_) close(p.fd);
  for (int fd : {listen_fd_, epoll_fd_, timer_fd_})
    if (fd >= 0) close(fd);
  if (listen_fd_ >= 0) unlink(options_.socket.c_str());
}

size_t Server::connections() {
  std::lock_guard lock(mu_);
  return open_conns_;
}

void Server::on_events() {
  epoll_event evs[64];
  const int n = epoll_wait(epoll_fd_, evs, 64, 0);
  for (int i = 0; i < n; ++i) {
    const uint64_t tag = evs[i].data.u64;
    if (tag == kListenTag) {
      accept_all();
      continue;
    }
    if (tag == kTimerTag) {
      uint64_t v;
      [[maybe_unused]] ssize_t r = read(timer_fd_, &v, sizeof(v));
      continue;
    }
    // By id, never by fd: a connection closed earlier in this round may have left its
    // events behind, and its fd number may already belong to a new one.
    Conn* c = find(static_cast<uint32_t>(tag));
    if (c == nullptr) continue;
    if ((evs[i].events & (EPOLLHUP | EPOLLERR)) != 0) {
      close_conn(*c);
      continue;
    }
    if ((evs[i].events & EPOLLOUT) != 0 && !on_writable(*c)) continue;
    if ((evs[i].events & EPOLLIN) != 0) on_readable(*c);
  }
  check_waiters(*stack_);
  arm_deadline();
}

void Server::accept_all() {
  while (true) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    c->id = next_conn_++;
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
      c->pid = cred.pid;
      c->uid = cred.uid;
      c->admitted = cred.uid == 0 || cred.uid == geteuid() ||
                    (options_.group != gid_t(-1) && cred.gid == options_.group);
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = c->id;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      close(fd);
      continue;
    }
    conns_[c->id] = std::move(c);
    std::lock_guard lock(mu_);
    ++open_conns_;
  }
}

void Server::on_readable(Conn& c) {
  std::vector<std::byte> buf(TEMPOD_MAX_MESSAGE);
  for (int i = 0; i < kBurst && c.reading && c.out.size() < options_.max_queued; ++i) {
    int fd = -1;
    const ssize_t n = recv_message(c.fd, buf.data(), buf.size(), &fd, MSG_DONTWAIT);
    if (n == -EAGAIN) return;
    if (n <= 0) {
      close_conn(c);
      return;
    }
    handle(c, buf.data(), static_cast<size_t>(n), fd);
    if (c.broken) {
      close_conn(c);
      return;
    }
  }
  update_interest(c);
}

bool Server::on_writable(Conn& c) {
  while (!c.out.empty()) {
    const auto& m = c.out.front();
    const ssize_t n = send_message(c.fd, m.data(), m.size(), -1, MSG_DONTWAIT);
    if (n == -EAGAIN) break;
    if (n < 0) {
      close_conn(c);
      return false;
    }
    c.out.pop_front();
  }
  update_interest(c);
  return true;
}

void Server::update_interest(Conn& c) {
  epoll_event ev{};
  ev.events = (c.reading && c.out.size() < options_.max_queued ? EPOLLIN : 0u) |
              (c.out.empty() ? 0u : EPOLLOUT);
  ev.data.u64 = c.id;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
}

void Server::reply(Conn& c, std::vector<std::byte> msg) {
  if (c.out.empty()) {
    const ssize_t n = send_message(c.fd, msg.data(), msg.size(), -1, MSG_DONTWAIT);
    if (n != -EAGAIN) return;  // sent, or the peer is gone (its hangup closes it)
  }
  c.out.push_back(std::move(msg));
  update_interest(c);
}

void Server::reply_status(Conn& c, uint16_t op, uint64_t seq, int status) {
  reply(c, make_reply<tempod_hdr>(op, seq, status));
}

void Server::reply_value(Conn& c, uint16_t op, uint64_t seq, int status, int64_t value) {
  auto m = make_reply<tempod_reply_value>(op, seq, status);
  body<tempod_reply_value>(m)->value = value;
  reply(c, std::move(m));
}

Server::Conn* Server::find(uint32_t id) {
  const auto it = conns_.find(id);
  return it != conns_.end() ? it->second.get() : nullptr;
}

void Server::handle(Conn& c, const std::byte* msg, size_t len, int fd) {
  tempod_hdr h{};
  if (len < sizeof(h)) {
    if (fd >= 0) close(fd);
    c.broken = true;
    return;
  }
  std::memcpy(&h, msg, sizeof(h));
  const uint16_t op = h.op;
  const uint64_t seq = h.seq;
  if (op != TEMPOD_OP_STORE_PUT && fd >= 0) close(fd);
  auto fail = [&](int status) {
    if (op == TEMPOD_OP_STORE_PUT && fd >= 0) close(fd);
    reply_status(c, op, seq, status);
  };
  if (h.len != len || h.reserved != 0 || h.status != 0) return fail(-EINVAL);
  if (h.version != TEMPOD_PROTO_VERSION) return fail(-EPROTONOSUPPORT);
  Stack& s = *stack_;
  if (op == TEMPOD_OP_HELLO) {
    if (len != sizeof(tempod_hello)) return fail(-EINVAL);
    tempod_hello hello;
    std::memcpy(&hello, msg, sizeof(hello));
    if (hello.reserved != 0 || hello.engine[sizeof(hello.engine) - 1] != '\0') return fail(-EINVAL);
    if (!c.admitted) {
      options_.log(4, "refused pid " + std::to_string(c.pid) + " (uid " + std::to_string(c.uid) +
                          "): not root, our uid or the socket's group");
      c.reading = false;  // nothing more from it: it closes on the error
      return fail(-EACCES);
    }
    c.hello = true;
    c.engine = hello.engine;
    options_.log(6, "client " + std::to_string(c.id) + " '" + c.engine + "' (pid " +
                        std::to_string(c.pid) + ") connected");
    auto m = make_reply<tempod_hello_reply>(op, seq, 0);
    auto* r = body<tempod_hello_reply>(m);
    r->features = hello.features & TEMPOD_F_ALL;
    r->client_id = c.id;
    const bool pass = region_fd_ >= 0 && (r->features & TEMPOD_F_FAST_TIER_FD) != 0;
    if (pass) {
      r->fast_tier_bytes = region_bytes_;
      r->fast_tier_align = region_align_;
    }
    const std::string dev = s.stats().device;
    std::memcpy(r->device, dev.data(), std::min(dev.size(), sizeof(r->device) - 1));
    // The first reply: the socket's buffer is empty, so it goes out now, fd included.
    if (send_message(c.fd, m.data(), m.size(), pass ? region_fd_ : -1, MSG_DONTWAIT) < 0)
      c.broken = true;
    return;
  }
  if (!c.hello) return fail(-EPROTO);
  auto claim = [&](tempod_claim_arg* a) {
    if (len != sizeof(*a)) return -EINVAL;
    std::memcpy(a, msg, sizeof(*a));
    return c.claims.count(a->id) ? 0 : -ENOENT;
  };
  tempod_claim_arg a{};
  switch (op) {
    case TEMPOD_OP_REPORT: {
      tempod_report r;
      if (len < sizeof(r)) return fail(-EINVAL);
      std::memcpy(&r, msg, sizeof(r));
      if (r.reserved != 0 || len != sizeof(r) + size_t{r.count} * sizeof(tempo_object))
        return fail(-EINVAL);
      Manifest m(r.count);
      for (uint32_t i = 0; i < r.count; ++i) {
        tempo_object o;
        std::memcpy(&o, msg + sizeof(r) + i * sizeof(o), sizeof(o));
        m[i] = {o.key, o.bytes};
      }
      ClaimId id = 0;
      const int st = s.report(m, r.ttu_ns, &id);
      if (st == 0) c.claims.insert(id);
      if (c.claims.size() > 2 * c.claims_after_prune + 1024) {
        // Forget the ids the stack erased (ended, past its retention): the set stays
        // bounded by the connection's live claims plus the stack's retained ended ones.
        ClaimView v;
        std::erase_if(c.claims, [&](ClaimId held) { return s.query(held, &v) == -ENOENT; });
        c.claims_after_prune = c.claims.size();
      }
      return reply_value(c, op, seq, st, static_cast<int64_t>(id));
    }
    case TEMPOD_OP_REVISE:
    case TEMPOD_OP_TRANSFER_BEGIN:
    case TEMPOD_OP_TRANSFER_END:
    case TEMPOD_OP_CANCEL: {
      if (const int st = claim(&a); st != 0) return fail(st);
      const int st = op == TEMPOD_OP_REVISE           ? s.revise(a.id, a.arg)
                     : op == TEMPOD_OP_TRANSFER_BEGIN ? s.begin_transfer(a.id)
                     : op == TEMPOD_OP_TRANSFER_END   ? s.end_transfer(a.id)
                                                      : s.cancel(a.id);
      return reply_status(c, op, seq, st);
    }
    case TEMPOD_OP_ORDER: {
      tempod_order o;
      if (len < sizeof(o)) return fail(-EINVAL);
      std::memcpy(&o, msg, sizeof(o));
      if (o.reserved != 0 || len != sizeof(o) + size_t{o.count} * sizeof(uint64_t))
        return fail(-EINVAL);
      std::vector<ClaimId> ids(o.count);
      if (o.count) std::memcpy(ids.data(), msg + sizeof(o), o.count * sizeof(uint64_t));
      for (ClaimId id : ids)
        if (id != TEMPO_NO_CLAIM && !c.claims.count(id)) return fail(-ENOENT);
      std::vector<ClaimId> before = std::move(c.order);
      c.order = std::move(ids);
      const int st = merge_orders(s);
      if (st != 0) c.order = std::move(before);
      return reply_status(c, op, seq, st);
    }
    case TEMPOD_OP_RETRIEVAL: {
      if (const int st = claim(&a); st != 0) return fail(st);
      RetrievalOutcome o{};
      const int st = s.request_retrieval(a.id, &o);
      return reply_value(c, op, seq, st, st == 0 ? static_cast<int64_t>(o) : 0);
    }
    case TEMPOD_OP_QUERY: {
      if (const int st = claim(&a); st != 0) return fail(st);
      ClaimView v;
      if (const int st = s.query(a.id, &v); st != 0) return fail(st);
      auto m = make_reply<tempod_hdr>(op, seq, 0, sizeof(tempo_claim_info));
      tempo_claim_info info;
      to_claim_info(v, &info);
      std::memcpy(m.data() + sizeof(tempod_hdr), &info, sizeof(info));
      return reply(c, std::move(m));
    }
    case TEMPOD_OP_WAIT_READY: {
      if (const int st = claim(&a); st != 0) return fail(st);
      if (a.arg < 0) return fail(-EINVAL);
      waiters_.push_back(Waiter{c.id, seq, a.id, saturating_deadline(ctx_.now(), a.arg)});
      return;  // answered by check_waiters() at the end of this round or later
    }
    case TEMPOD_OP_EXTENTS: {
      if (const int st = claim(&a); st != 0) return fail(st);
      std::vector<std::span<const std::byte>> ext;
      if (const int st = s.extents(a.id, &ext); st != 0) return fail(st);
      if (region_base_ == nullptr) return fail(-EOPNOTSUPP);
      if (ext.size() > TEMPOD_MAX_EXTENTS) return fail(-E2BIG);
      auto m = make_reply<tempod_reply_value>(op, seq, 0, ext.size() * sizeof(tempod_extent));
      body<tempod_reply_value>(m)->value = static_cast<int64_t>(ext.size());
      for (size_t i = 0; i < ext.size(); ++i) {
        const tempod_extent e{static_cast<__u64>(ext[i].data() - region_base_), ext[i].size()};
        std::memcpy(m.data() + sizeof(tempod_reply_value) + i * sizeof(e), &e, sizeof(e));
      }
      return reply(c, std::move(m));
    }
    case TEMPOD_OP_ORDINARY_READ: {
      if (const int st = claim(&a); st != 0) return fail(st);
      const uint32_t cid = c.id;
      const int st = s.ordinary_read(a.id, [this, alive = alive_, cid, op, seq](int status) {
        if (!*alive) return;
        if (Conn* k = find(cid)) reply_status(*k, op, seq, status);
      });
      if (st != 0) fail(st);
      return;
    }
    case TEMPOD_OP_STATS: {
      if (len != sizeof(tempod_hdr)) return fail(-EINVAL);
      auto m = make_reply<tempod_hdr>(op, seq, 0, sizeof(tempo_stats));
      tempo_stats st;
      to_stats(s.stats(), &st);
      std::memcpy(m.data() + sizeof(tempod_hdr), &st, sizeof(st));
      return reply(c, std::move(m));
    }
    case TEMPOD_OP_TICK:
      s.tick();
      return reply_status(c, op, seq, 0);
    case TEMPOD_OP_NOW:
      return reply_value(c, op, seq, 0, ctx_.now());
    case TEMPOD_OP_STORE_PUT: {
      tempod_store_put p;
      if (len != sizeof(p)) return fail(-EINVAL);
      std::memcpy(&p, msg, sizeof(p));
      if (fd < 0) return fail(-EBADF);
      // The put maps the file: one its sender could still shrink would fault (SIGBUS) on
      // the pages cut off, and kill the daemon. Only files sealed against that are taken.
      const int seals = fcntl(fd, F_GET_SEALS);
      if (p.bytes == 0 || seals < 0 || (seals & F_SEAL_SHRINK) == 0) return fail(-EINVAL);
      {
        std::lock_guard lock(mu_);
        puts_.push_back(Put{c.id, seq, p.key, p.bytes, fd});
      }
      put_ready_.notify_one();
      return;
    }
    default:
      return fail(-ENOTTY);
  }
}

void Server::put_worker() {
  while (true) {
    Put p;
    {
      std::unique_lock lock(mu_);
      put_ready_.wait(lock, [&] { return stopping_ || !puts_.empty(); });
      if (stopping_) return;
      p = puts_.front();
      puts_.pop_front();
    }
    int status = -EINVAL;
    struct stat st {};
    if (fstat(p.fd, &st) == 0 && static_cast<uint64_t>(st.st_size) >= p.bytes) {
      void* at = mmap(nullptr, p.bytes, PROT_READ, MAP_SHARED, p.fd, 0);
      if (at == MAP_FAILED) {
        status = -errno;
      } else {
        status = ctx_.store_put(p.key, std::span(static_cast<const std::byte*>(at), p.bytes));
        munmap(at, p.bytes);
      }
    }
    close(p.fd);
    ctx_.call([&](Stack&) {
      if (Conn* c = find(p.conn)) reply_status(*c, TEMPOD_OP_STORE_PUT, p.seq, status);
    });
  }
}

void Server::close_conn(Conn& c) {
  Stack& s = *stack_;
  size_t ended_transfers = 0;
  size_t cancelled = 0;
  for (ClaimId id : c.claims) {
    ClaimView v;
    if (s.query(id, &v) != 0 || ended(v.state)) continue;
    if (v.state == ClaimState::kTransferring)
      ended_transfers += s.end_transfer(id) == 0;
    else
      cancelled += s.cancel(id) == 0;
  }
  if (c.hello)
    options_.log(6, "client " + std::to_string(c.id) + " '" + c.engine + "' (pid " +
                        std::to_string(c.pid) + ") gone: " + std::to_string(cancelled) +
                        " claims cancelled, " + std::to_string(ended_transfers) +
                        " transfers ended");
  std::erase_if(waiters_, [&](const Waiter& w) { return w.conn == c.id; });
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  close(c.fd);
  const bool had_order = !c.order.empty();
  conns_.erase(c.id);  // c is gone from here on
  if (had_order) merge_orders(s);
  std::lock_guard lock(mu_);
  --open_conns_;
}

int Server::merge_orders(Stack& s) {
  // Round robin over the connections' queues, oldest connection first: each engine's
  // order is kept, and no engine's queue starves another's.
  std::vector<const Conn*> by_id;
  for (auto& [id, c] : conns_)  // in id order
    if (!c->order.empty()) by_id.push_back(c.get());
  std::vector<ClaimId> merged;
  ClaimView v;
  for (size_t i = 0;; ++i) {
    bool any = false;
    for (const Conn* c : by_id) {
      if (i >= c->order.size()) continue;
      any = true;
      const ClaimId id = c->order[i];
      if (id == TEMPO_NO_CLAIM || s.query(id, &v) == 0) merged.push_back(id);
    }
    if (!any) break;
  }
  return s.update_order(merged);
}

void Server::check_waiters(Stack& s) {
  const TimeNs now = ctx_.now();
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    Conn* c = find(it->conn);
    RetrievalOutcome o{};
    const int r = c ? s.readiness(it->id, &o) : 0;
    if (c && r == -EAGAIN && now < it->deadline) {
      ++it;
      continue;
    }
    if (c)
      reply_value(*c, TEMPOD_OP_WAIT_READY, it->seq, r == -EAGAIN ? -ETIMEDOUT : r,
                  r == 0 ? static_cast<int64_t>(o) : 0);
    it = waiters_.erase(it);
  }
}

void Server::arm_deadline() {
  TimeNs next = kNever;
  for (const Waiter& w : waiters_) next = std::min(next, w.deadline);
  itimerspec its{};
  if (next != kNever) {
    const TimeNs at = std::max<TimeNs>(next, 1);
    its.it_value.tv_sec = at / kNsPerSec;
    its.it_value.tv_nsec = at % kNsPerSec;
  }
  timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &its, nullptr);
}

void Server::on_claim_ready(ClaimId) { check_waiters(*stack_); }

void Server::on_claim_ordinary(ClaimId) { check_waiters(*stack_); }

}  // namespace tempo
