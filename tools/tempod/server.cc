#include "server.h"

#include <fcntl.h>
#include <netinet/in.h>
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
#include <iterator>
#include <tuple>

#include "client/exposition.h"
#include "client/tempod_proto.h"
#include "client/wire.h"
#include "core/unix_socket.h"
#include "kmod/kmod_device.h"
#include "store/object_store.h"
#include "store/verify_objects.h"
#include "uring/uring_device.h"

namespace tempo {
namespace {

constexpr int kBurst = 32;  // requests read from one client per wakeup (fairness)
// epoll tags besides connection ids (which count up from 1).
constexpr uint64_t kListenTag = ~uint64_t{0};
constexpr uint64_t kTimerTag = ~uint64_t{0} - 1;
constexpr uint64_t kMetricsListenTag = ~uint64_t{0} - 2;
constexpr uint64_t kMetricsTag = uint64_t{1} << 62;  // + n: metrics connection n
// The metrics listener's bounds: connections at once, request bytes, and how long one
// connection may take from accept to the end of its reply (Prometheus' default scrape
// timeout).
constexpr size_t kMetricsConns = 8;
constexpr size_t kMetricsRequestBytes = 4096;
constexpr TimeNs kMetricsDeadline = 10 * kNsPerSec;
// The listener's queue, and the most connections taken off it per wakeup (the others'
// requests are read between).
constexpr int kBacklog = 128;
// How long the listener rests after accept failed (out of descriptors, or memory).
constexpr TimeNs kAcceptBackoff = 100 * kNsPerMs;

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

// A request of a fixed part with `count` and `reserved` fields (Head) followed by `count`
// items: the fixed part in *head and the items in *items. -EINVAL when the length is not
// exactly that or `reserved` is not zero.
template <typename Item, typename Head>
int parse_counted(const std::byte* msg, size_t len, Head* head, std::vector<Item>* items) {
  if (len < sizeof(Head)) return -EINVAL;
  std::memcpy(head, msg, sizeof(Head));
  if (head->reserved != 0 || len != sizeof(Head) + size_t{head->count} * sizeof(Item))
    return -EINVAL;
  items->resize(head->count);
  if (head->count) std::memcpy(items->data(), msg + sizeof(Head), head->count * sizeof(Item));
  return 0;
}

bool ended(ClaimState s) {
  return s == ClaimState::kReleased || s == ClaimState::kCancelled || s == ClaimState::kFailed;
}

// A non-blocking TCP listener on addr:port (network order address). 0, or -errno.
int listen_tcp(uint32_t addr, uint16_t port, int* out, std::string* error) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = addr;
  a.sin_port = htons(port);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int on = 1;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
      bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(fd, 16) != 0) {
    const int err = errno;
    if (fd >= 0) close(fd);
    *error = "daemon.metrics_listen port " + std::to_string(port) + ": " + std::strerror(err);
    return -err;
  }
  *out = fd;
  return 0;
}

int bind_socket(const std::string& path, int* out, std::string* error) {
  sockaddr_un addr;
  if (const int r = ready_socket_path(path, SOCK_SEQPACKET, "another tempod", &addr, error); r != 0)
    return r;
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, kBacklog) != 0) {
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
  if (options.metrics_port != 0) {
    if (const int r =
            listen_tcp(options.metrics_addr, options.metrics_port, &s->metrics_fd_, error);
        r != 0)
      return r;
  }
  s->spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
  s->epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  s->timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  for (auto [fd, tag] : {std::pair{s->listen_fd_, kListenTag}, std::pair{s->timer_fd_, kTimerTag},
                         std::pair{s->metrics_fd_, kMetricsListenTag}}) {
    if (fd < 0 && tag == kMetricsListenTag) continue;  // no metrics listener
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
    } else if (auto* kmod = dynamic_cast<KmodDevice*>(&st.device())) {
      self->kmod_ = kmod;
      self->region_base_ = kmod->mapping();
      self->region_bytes_ = kmod->geometry().size;
      self->region_align_ = kmod->geometry().extent_bytes;
    }
  });
  s->put_thread_ = std::thread([self] { self->put_worker(); });
  if (const int r = ctx.watch(s->epoll_fd_, [self] { self->on_events(); }); r != 0) {
    *error = "tempod needs the threaded driver (device = uring or kmod)";
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
    while (!metrics_.empty()) close_metrics(metrics_.begin()->first);
    if (stack_) st.set_observer(nullptr);
  });
  for (const Put& p : puts_)
    if (p.fd >= 0) close(p.fd);
  for (int fd : {listen_fd_, epoll_fd_, timer_fd_, metrics_fd_, spare_fd_})
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
    if (tag == kMetricsListenTag) {
      accept_metrics();
      continue;
    }
    if (tag >= kMetricsTag) {
      on_metrics(tag, evs[i].events);
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
  expire_metrics();
  expire_hellos();
  arm_deadline();
}

void Server::accept_all() {
  for (int i = 0; i < kBacklog; ++i) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // EAGAIN: none left; ECONNABORTED: that one left, the next event takes the others.
      if (errno != EAGAIN && errno != ECONNABORTED && errno != EINTR) accept_failed(errno);
      return;
    }
    if (conns_.size() >= options_.max_connections) {
      if (!full_logged_)
        options_.log(4, "connection limit " + std::to_string(options_.max_connections) +
                            " reached (daemon.max_connections): refusing new connections");
      full_logged_ = true;
      refuse(fd, -EBUSY);
      continue;
    }
    full_logged_ = false;
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
    hello_due_.emplace_back(saturating_deadline(ctx_.now(), options_.hello_timeout), c->id);
    conns_[c->id] = std::move(c);
    std::lock_guard lock(mu_);
    ++open_conns_;
  }
}

void Server::refuse(int fd, int status) {
  auto m = make_reply<tempod_hello_reply>(TEMPOD_OP_HELLO, 0, status);
  if (status == -EBUSY)
    body<tempod_hello_reply>(m)->client_id = static_cast<uint32_t>(options_.max_connections);
  send_message(fd, m.data(), m.size(), -1, MSG_DONTWAIT);
  close(fd);
}

void Server::accept_failed(int err) {
  if (!full_logged_)
    options_.log(4, std::string("accept: ") + std::strerror(err) +
                        ": new connections are refused while it lasts");
  full_logged_ = true;
  // The spare descriptor makes room to take each queued connection off the listener and
  // tell it why, rather than leave it waiting out its connect timeout.
  if ((err == EMFILE || err == ENFILE) && spare_fd_ >= 0) {
    close(spare_fd_);
    for (int i = 0; i < kBacklog; ++i) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) break;
      refuse(fd, -EMFILE);
    }
    spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
  // Level-triggered, the listener would wake the loop again at once while nothing can be
  // accepted: it rests instead, and the deadline timer brings it back.
  epoll_event ev{};
  ev.data.u64 = kListenTag;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);
  accept_resume_ = saturating_deadline(ctx_.now(), kAcceptBackoff);
}

void Server::expire_hellos() {
  const TimeNs now = ctx_.now();
  while (!hello_due_.empty()) {
    const auto [deadline, id] = hello_due_.front();
    Conn* c = find(id);
    if (c != nullptr && !c->engine) {
      if (deadline > now) break;
      options_.log(7, "client " + std::to_string(id) + " (pid " + std::to_string(c->pid) +
                          "): no HELLO within daemon.hello_timeout, closed");
      close_conn(*c);
    }
    hello_due_.pop_front();
  }
  if (accept_resume_ <= now) {
    accept_resume_ = kNever;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kListenTag;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);
  }
}

void Server::on_readable(Conn& c) {
  rx_.resize(TEMPOD_MAX_MESSAGE);
  for (int i = 0; i < kBurst && reads(c); ++i) {
    int fd = -1;
    const ssize_t n = recv_message(c.fd, rx_.data(), rx_.size(), &fd, MSG_DONTWAIT);
    if (n == -EAGAIN) return;
    if (n <= 0) {
      close_conn(c);
      return;
    }
    handle(c, rx_.data(), static_cast<size_t>(n), fd);
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

bool Server::reads(const Conn& c) const {
  return c.reading && c.out.size() + c.pending < options_.max_queued;
}

void Server::update_interest(Conn& c) {
  epoll_event ev{};
  ev.events = (reads(c) ? EPOLLIN : 0u) | (c.out.empty() ? 0u : EPOLLOUT);
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

uint32_t Server::share_of(const std::string& engine) const {
  const auto it = options_.shares.find(engine);
  return it != options_.shares.end() ? it->second : options_.default_share;
}

Server::Conn* Server::find(uint32_t id) {
  const auto it = conns_.find(id);
  return it != conns_.end() ? it->second.get() : nullptr;
}

bool Server::owns(const Conn& c, ClaimId id) const {
  const auto it = owners_.find(id);
  return it != owners_.end() && it->second.engine == c.engine;
}

void Server::prune_owners(Stack& s) {
  if (owners_.size() <= 2 * owners_after_prune_ + 1024) return;
  // Forget the ids the stack erased (ended, past its retention): the map stays bounded by
  // the live claims plus the stack's retained ended ones.
  ClaimView v;
  std::erase_if(owners_, [&](const auto& o) { return s.query(o.first, &v) == -ENOENT; });
  owners_after_prune_ = owners_.size();
}

int Server::claim_op(Conn& c, uint16_t op, ClaimId id, int64_t arg,
                     std::span<const tempo_object> objects, int64_t* value,
                     const TtuQuantiles* spread) {
  Stack& s = *stack_;
  *value = 0;
  if (op == TEMPOD_OP_REPORT) {
    Manifest m(objects.size());
    for (size_t i = 0; i < objects.size(); ++i) m[i] = {objects[i].key, objects[i].bytes};
    ClaimId got = 0;
    const int st = s.report(m, arg, &got, nullptr, c.engine->group);
    if (st != 0) return st;
    owners_[got] = Owner{c.engine, c.id};
    prune_owners(s);
    *value = static_cast<int64_t>(got);
    return 0;
  }
  if (!owns(c, id)) return -ENOENT;
  switch (op) {
    case TEMPOD_OP_REVISE:
      return s.revise(id, arg);
    case TEMPOD_OP_REVISE_SPREAD:
      return s.revise(id, arg, spread);
    case TEMPOD_OP_CANCEL:
      return s.cancel(id);
    case TEMPOD_OP_TRANSFER_BEGIN: {
      const int st = s.begin_transfer(id);
      if (st == 0) c.transfers.insert(id);
      return st;
    }
    case TEMPOD_OP_TRANSFER_END: {
      const int st = s.end_transfer(id);
      if (st == 0) c.transfers.erase(id);
      return st;
    }
    case TEMPOD_OP_RETRIEVAL: {
      RetrievalOutcome o{};
      const int st = s.request_retrieval(id, &o);
      if (st == 0) *value = static_cast<int64_t>(o);
      return st;
    }
    default:
      return -EINVAL;
  }
}

void Server::hello(Conn& c, const std::byte* msg, size_t len, uint64_t seq) {
  const uint16_t op = TEMPOD_OP_HELLO;
  tempod_hello h;
  if (len != sizeof(h)) return reply_status(c, op, seq, -EINVAL);
  std::memcpy(&h, msg, sizeof(h));
  if (h.reserved != 0 || h.engine[sizeof(h.engine) - 1] != '\0' || c.engine)
    return reply_status(c, op, seq, -EINVAL);
  if (!c.admitted) {
    options_.log(4, "refused pid " + std::to_string(c.pid) + " (uid " + std::to_string(c.uid) +
                        "): not root, our uid or the socket's group");
    c.reading = false;  // nothing more from it: it closes on the error
    return reply_status(c, op, seq, -EACCES);
  }
  // The descriptor bits are shared only where this device has that descriptor.
  const uint32_t fd_bits = region_fd_ >= 0 ? TEMPOD_F_FAST_TIER_FD : kmod_ ? TEMPOD_F_KMOD_FD : 0;
  const uint32_t features =
      h.features & ((TEMPOD_F_ALL & ~(TEMPOD_F_FAST_TIER_FD | TEMPOD_F_KMOD_FD)) | fd_bits);
  // uring: the arena's memfd (or DAX fd), mapped read-only by every client. kmod: a new
  // read-only file of the device for this client alone, never the daemon's own (whose
  // pins and records its holder could drop or read); closed here once sent.
  int pass = (features & TEMPOD_F_FAST_TIER_FD) != 0 ? region_fd_ : -1;
  if ((features & TEMPOD_F_KMOD_FD) != 0 && (pass = kmod_->open_reader()) < 0) {
    options_.log(3, "client " + std::to_string(c.id) +
                        ": cannot open the device for it: " + std::strerror(-pass));
    return reply_status(c, op, seq, pass);
  }
  // A named engine is shared by every connection that gives its name; an unnamed one is
  // this connection's alone.
  const bool named = h.engine[0] != '\0';
  const std::string name =
      named ? std::string(h.engine) : "#" + std::to_string(c.id) + " pid " + std::to_string(c.pid);
  std::shared_ptr<Engine> fresh;
  std::shared_ptr<Engine>& e = named ? engines_[name] : fresh;
  if (!e) {
    e = std::make_shared<Engine>();
    e->name = name.substr(0, sizeof(h.engine) - 1);
    e->group = next_group_++;
    stack_->controller().set_share(e->group, share_of(e->name));
  }
  ++e->conns;
  c.engine = e;
  options_.log(6, "client " + std::to_string(c.id) + " '" + name + "' (pid " +
                      std::to_string(c.pid) + ") connected");
  auto m = make_reply<tempod_hello_reply>(op, seq, 0);
  auto* r = body<tempod_hello_reply>(m);
  r->features = features;
  if (!reads_ttu_spread(stack_->controller().config().policy)) r->features &= ~TEMPOD_F_TTU_SPREAD;
  r->client_id = c.id;
  if (pass >= 0) {
    r->fast_tier_bytes = region_bytes_;
    r->fast_tier_align = region_align_;
  }
  const std::string dev = stack_->stats().device;
  std::memcpy(r->device, dev.data(), std::min(dev.size(), sizeof(r->device) - 1));
  // The first reply: the socket's buffer is empty, so it goes out now, fd included.
  if (send_message(c.fd, m.data(), m.size(), pass, MSG_DONTWAIT) < 0) c.broken = true;
  if (pass >= 0 && pass != region_fd_) close(pass);
}

void Server::handle_batch(Conn& c, const std::byte* msg, size_t len, uint64_t seq) {
  const uint16_t op = TEMPOD_OP_BATCH;
  tempod_batch b;
  if (len < sizeof(b)) return reply_status(c, op, seq, -EINVAL);
  std::memcpy(&b, msg, sizeof(b));
  if (b.reserved != 0) return reply_status(c, op, seq, -EINVAL);
  // Parse every entry before running any: a malformed one fails the message, none run.
  struct Entry {
    tempod_batch_entry e;
    size_t objects_at;
    TtuQuantiles spread;  // REVISE_SPREAD's
  };
  std::vector<Entry> entries;
  size_t at = sizeof(b);
  for (uint32_t i = 0; i < b.count; ++i) {
    Entry x{};
    if (len - at < sizeof(x.e)) return reply_status(c, op, seq, -EINVAL);
    std::memcpy(&x.e, msg + at, sizeof(x.e));
    at += sizeof(x.e);
    x.objects_at = at;
    const bool report = x.e.op == TEMPOD_OP_REPORT;
    const bool spread = x.e.op == TEMPOD_OP_REVISE_SPREAD;
    const bool known = report || spread || x.e.op == TEMPOD_OP_REVISE ||
                       x.e.op == TEMPOD_OP_CANCEL || x.e.op == TEMPOD_OP_RETRIEVAL ||
                       x.e.op == TEMPOD_OP_TRANSFER_BEGIN || x.e.op == TEMPOD_OP_TRANSFER_END;
    if (!known || x.e.reserved != 0 || (report ? x.e.id != 0 : x.e.count != 0) ||
        (!report && !spread && x.e.op != TEMPOD_OP_REVISE && x.e.arg != 0) ||
        (len - at) / sizeof(tempo_object) < x.e.count)
      return reply_status(c, op, seq, -EINVAL);
    at += size_t{x.e.count} * sizeof(tempo_object);
    if (spread) {
      tempod_ttu_spread q;
      if (len - at < sizeof(q)) return reply_status(c, op, seq, -EINVAL);
      std::memcpy(&q, msg + at, sizeof(q));
      at += sizeof(q);
      if (!std::is_sorted(std::begin(q.at), std::end(q.at)))
        return reply_status(c, op, seq, -EINVAL);
      std::copy(std::begin(q.at), std::end(q.at), x.spread.at.begin());
    }
    entries.push_back(x);
  }
  if (at != len) return reply_status(c, op, seq, -EINVAL);
  auto m = make_reply<tempod_reply_value>(op, seq, 0, entries.size() * sizeof(tempod_batch_result));
  body<tempod_reply_value>(m)->value = static_cast<int64_t>(entries.size());
  std::vector<tempo_object> objects;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& x = entries[i];
    objects.resize(x.e.count);
    if (x.e.count)
      std::memcpy(objects.data(), msg + x.objects_at, x.e.count * sizeof(tempo_object));
    tempod_batch_result r{};
    int64_t value = 0;
    r.status = claim_op(c, x.e.op, x.e.id, x.e.arg, objects, &value, &x.spread);
    r.value = value;
    std::memcpy(m.data() + sizeof(tempod_reply_value) + i * sizeof(r), &r, sizeof(r));
  }
  reply(c, std::move(m));
}

void Server::handle_claims(Conn& c, const std::byte* msg, size_t len, uint64_t seq) {
  const uint16_t op = TEMPOD_OP_CLAIMS;
  tempod_claims q;
  if (len != sizeof(q)) return reply_status(c, op, seq, -EINVAL);
  std::memcpy(&q, msg, sizeof(q));
  if (q.reserved != 0 || q.max == 0 || q.max > TEMPOD_MAX_CLAIMS)
    return reply_status(c, op, seq, -EINVAL);
  const std::vector<ClaimView> page = stack_->list(q.after, q.max);
  auto m = make_reply<tempod_reply_value>(op, seq, 0, page.size() * sizeof(tempod_claim_entry));
  body<tempod_reply_value>(m)->value = static_cast<int64_t>(page.size());
  for (size_t i = 0; i < page.size(); ++i) {
    tempod_claim_entry e{};
    e.id = page[i].id;
    to_claim_info(page[i], &e.info);
    if (const auto it = owners_.find(page[i].id); it != owners_.end()) {
      const Owner& o = it->second;
      std::memcpy(e.engine, o.engine->name.data(), o.engine->name.size());
      e.client = o.conn;
    }
    std::memcpy(e.request, page[i].request.data(),
                std::min(page[i].request.size(), sizeof(e.request) - 1));
    std::memcpy(m.data() + sizeof(tempod_reply_value) + i * sizeof(e), &e, sizeof(e));
  }
  reply(c, std::move(m));
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
  // Only STORE_PUT takes a descriptor: any other is closed here and forgotten, so nothing
  // (a store operation's Put) can close its number again once it belongs to someone else.
  if (op != TEMPOD_OP_STORE_PUT && fd >= 0) {
    close(fd);
    fd = -1;
  }
  auto fail = [&](int status) {
    if (op == TEMPOD_OP_STORE_PUT && fd >= 0) close(fd);
    reply_status(c, op, seq, status);
  };
  if (h.len != len || h.reserved != 0 || h.status != 0) return fail(-EINVAL);
  if (h.version != TEMPOD_PROTO_VERSION) return fail(-EPROTONOSUPPORT);
  Stack& s = *stack_;
  if (op == TEMPOD_OP_HELLO) return hello(c, msg, len, seq);
  if (!c.engine) return fail(-EPROTO);
  switch (op) {
    case TEMPOD_OP_REPORT: {
      tempod_report r;
      std::vector<tempo_object> objects;
      if (const int st = parse_counted(msg, len, &r, &objects); st != 0) return fail(st);
      int64_t id = 0;
      const int st = claim_op(c, op, 0, r.ttu_ns, objects, &id);
      return reply_value(c, op, seq, st, id);
    }
    case TEMPOD_OP_REVISE:
    case TEMPOD_OP_TRANSFER_BEGIN:
    case TEMPOD_OP_TRANSFER_END:
    case TEMPOD_OP_CANCEL:
    case TEMPOD_OP_RETRIEVAL: {
      tempod_claim_arg a;
      if (len != sizeof(a)) return fail(-EINVAL);
      std::memcpy(&a, msg, sizeof(a));
      if (op != TEMPOD_OP_REVISE && a.arg != 0) return fail(-EINVAL);
      int64_t value = 0;
      const int st = claim_op(c, op, a.id, a.arg, {}, &value);
      if (op == TEMPOD_OP_RETRIEVAL) return reply_value(c, op, seq, st, value);
      return reply_status(c, op, seq, st);
    }
    case TEMPOD_OP_BATCH:
      return handle_batch(c, msg, len, seq);
    case TEMPOD_OP_ORDER: {
      tempod_order o;
      std::vector<ClaimId> ids;
      if (const int st = parse_counted(msg, len, &o, &ids); st != 0) return fail(st);
      for (ClaimId id : ids)
        if (id != TEMPO_NO_CLAIM && !owns(c, id)) return fail(-ENOENT);
      Engine& e = *c.engine;
      std::vector<ClaimId> before = std::move(e.order);
      e.order = std::move(ids);
      const int st = merge_orders(s);
      if (st != 0) e.order = std::move(before);
      return reply_status(c, op, seq, st);
    }
    case TEMPOD_OP_QUERY:
    case TEMPOD_OP_WAIT_READY:
    case TEMPOD_OP_EXTENTS:
    case TEMPOD_OP_ORDINARY_READ:
      break;  // below: one claim, its own replies
    case TEMPOD_OP_LABEL: {
      tempod_label l;
      if (len != sizeof(l)) return fail(-EINVAL);
      std::memcpy(&l, msg, sizeof(l));
      if (l.request[sizeof(l.request) - 1] != '\0') return fail(-EINVAL);
      if (!owns(c, l.id)) return fail(-ENOENT);
      return reply_status(c, op, seq, s.label(l.id, l.request));
    }
    case TEMPOD_OP_SET_LAYERS: {
      tempod_layers l;
      if (len != sizeof(l)) return fail(-EINVAL);
      std::memcpy(&l, msg, sizeof(l));
      if (l.reserved != 0) return fail(-EINVAL);
      if (!owns(c, l.id)) return fail(-ENOENT);
      return reply_status(c, op, seq, s.set_layers(l.id, l.groups, l.per_group_ns));
    }
    case TEMPOD_OP_CLAIMS:
      return handle_claims(c, msg, len, seq);
    case TEMPOD_OP_STATS: {
      if (len != sizeof(tempod_hdr)) return fail(-EINVAL);
      auto m = make_reply<tempod_hdr>(op, seq, 0, sizeof(tempo_counters));
      tempo_counters st;
      to_counters(s.stats(), &st);
      std::memcpy(m.data() + sizeof(tempod_hdr), &st, sizeof(st));
      return reply(c, std::move(m));
    }
    case TEMPOD_OP_TICK:
      if (len != sizeof(tempod_hdr)) return fail(-EINVAL);
      s.tick();
      return reply_status(c, op, seq, 0);
    case TEMPOD_OP_NOW:
      if (len != sizeof(tempod_hdr)) return fail(-EINVAL);
      return reply_value(c, op, seq, 0, ctx_.now());
    case TEMPOD_OP_STORE_LOOKUP: {
      tempod_keys k;
      std::vector<ObjectKey> keys;
      if (const int st = parse_counted(msg, len, &k, &keys); st != 0) return fail(st);
      const auto held = std::find_if(keys.begin(), keys.end(),
                                     [&](ObjectKey key) { return s.object_size(key) < 0; });
      return reply_value(c, op, seq, 0, held - keys.begin());
    }
    case TEMPOD_OP_KMOD_ADD_OBJECTS: {
      tempod_kmod_objects k;
      std::vector<tempo_kmod_object> objects;
      if (const int st = parse_counted(msg, len, &k, &objects); st != 0) return fail(st);
      std::vector<ObjectPlacement> placed(objects.size());
      for (size_t i = 0; i < objects.size(); ++i) {
        if (objects[i].reserved != 0) return fail(-EINVAL);
        placed[i] = {objects[i].key, objects[i].offset, objects[i].bytes};
      }
      return reply_status(c, op, seq, ctx_.kmod_add_objects(placed));
    }
    case TEMPOD_OP_TIMELINESS: {
      if (len != sizeof(tempod_hdr)) return fail(-EINVAL);
      auto m = make_reply<tempod_timeliness>(op, seq, 0);
      to_timeliness(s.controller().stats(), body<tempod_timeliness>(m));
      return reply(c, std::move(m));
    }
    case TEMPOD_OP_STORE_LIST:
    case TEMPOD_OP_STORE_VERIFY:
    case TEMPOD_OP_STORE_GC:
    case TEMPOD_OP_STORE_PUT:
    case TEMPOD_OP_STORE_DELETE: {
      if (ctx_.store() == nullptr) return fail(-EOPNOTSUPP);
      Put p{op, c.id, seq, 0, 0, fd, {}};
      if (op == TEMPOD_OP_STORE_LIST) {
        if (len != sizeof(p.list)) return fail(-EINVAL);
        std::memcpy(&p.list, msg, sizeof(p.list));
        if (p.list.max == 0 || p.list.max > TEMPOD_MAX_STORE_OBJECTS || p.list.first > 1 ||
            p.list.quarantined > 1)
          return fail(-EINVAL);
      } else if (op == TEMPOD_OP_STORE_VERIFY || op == TEMPOD_OP_STORE_GC) {
        if (len != sizeof(tempod_hdr)) return fail(-EINVAL);
      } else if (op == TEMPOD_OP_STORE_PUT) {
        tempod_store_put r;
        if (len != sizeof(r)) return fail(-EINVAL);
        std::memcpy(&r, msg, sizeof(r));
        if (fd < 0) return fail(-EBADF);
        // The put maps the file: one its sender could still shrink would fault (SIGBUS) on
        // the pages cut off, and kill the daemon. Only files sealed against that are taken.
        const int seals = fcntl(fd, F_GET_SEALS);
        if (r.bytes == 0 || seals < 0 || (seals & F_SEAL_SHRINK) == 0) return fail(-EINVAL);
        // Bounded before anything is mapped or written: a huge file never reaches the store.
        if (r.bytes > options_.max_put_bytes) return fail(-EFBIG);
        p.key = r.key;
        p.bytes = r.bytes;
      } else {
        tempod_key r;
        if (len != sizeof(r)) return fail(-EINVAL);
        std::memcpy(&r, msg, sizeof(r));
        if (r.reserved != 0) return fail(-EINVAL);
        p.key = r.key;
      }
      ++c.pending;
      {
        std::lock_guard lock(mu_);
        puts_.push_back(p);
      }
      put_ready_.notify_one();
      return;
    }
    default:
      return fail(-ENOTTY);
  }
  // QUERY, WAIT_READY, EXTENTS, ORDINARY_READ.
  tempod_claim_arg a;
  if (len != sizeof(a)) return fail(-EINVAL);
  std::memcpy(&a, msg, sizeof(a));
  if (!owns(c, a.id)) return fail(-ENOENT);
  switch (op) {
    case TEMPOD_OP_QUERY: {
      ClaimView v;
      if (const int st = s.query(a.id, &v); st != 0) return fail(st);
      auto m = make_reply<tempod_hdr>(op, seq, 0, sizeof(tempo_claim_info));
      tempo_claim_info info;
      to_claim_info(v, &info);
      std::memcpy(m.data() + sizeof(tempod_hdr), &info, sizeof(info));
      return reply(c, std::move(m));
    }
    case TEMPOD_OP_WAIT_READY:
      if (a.arg < 0) return fail(-EINVAL);
      ++c.pending;
      waiters_.push_back(Waiter{c.id, seq, a.id, saturating_deadline(ctx_.now(), a.arg)});
      return;  // answered by check_waiters() at the end of this round or later
    case TEMPOD_OP_EXTENTS: {
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
    default: {  // ORDINARY_READ
      const uint32_t cid = c.id;
      const int st = s.ordinary_read(a.id, [this, alive = alive_, cid, op, seq](int status) {
        if (!*alive) return;
        if (Conn* k = find(cid)) reply_status(*k, op, seq, status);
      });
      if (st != 0) fail(st);
      return;
    }
  }
}

namespace {

tempod_store_object store_object(const ObjectInfo& i, int error, const std::string& reason) {
  tempod_store_object o{};
  o.key = i.key;
  o.size = i.size;
  o.offset = i.offset;
  o.checksum = i.checksum;
  o.seq = i.seq;
  o.error = error;
  std::memcpy(o.reason, reason.data(), std::min(reason.size(), sizeof(o.reason) - 1));
  return o;
}

// Appends an object to a reply and sets the reply's length.
void append(std::vector<std::byte>* m, const tempod_store_object& o) {
  const size_t at = m->size();
  m->resize(at + sizeof(o));
  std::memcpy(m->data() + at, &o, sizeof(o));
  reinterpret_cast<tempod_hdr*>(m->data())->len = static_cast<uint32_t>(m->size());
}

}  // namespace

std::vector<std::byte> Server::store_op(const Put& p) {
  ObjectStore& store = *ctx_.store();
  if (p.op == TEMPOD_OP_STORE_LIST) {
    std::vector<tempod_store_object> page;
    auto in_page = [&](ObjectKey k) {
      return k > p.list.after || (p.list.first && k == p.list.after);
    };
    if (p.list.quarantined) {
      for (const QuarantinedObject& q : store.quarantined())
        if (in_page(q.key)) page.push_back(store_object(ObjectInfo{q.key}, q.error, q.reason));
    } else {
      for (const ObjectInfo& i : store.list())
        if (in_page(i.key)) page.push_back(store_object(i, 0, ""));
    }
    std::sort(page.begin(), page.end(), [](auto& a, auto& b) { return a.key < b.key; });
    if (page.size() > p.list.max) page.resize(p.list.max);
    auto m = make_reply<tempod_reply_value>(p.op, p.seq, 0);
    body<tempod_reply_value>(m)->value = static_cast<int64_t>(page.size());
    for (const tempod_store_object& o : page) append(&m, o);
    return m;
  }
  if (p.op == TEMPOD_OP_STORE_VERIFY) {
    // Every object read and checked (a bad one is quarantined by the read), then the ones
    // quarantined before, as `tempoctl store verify` does at rest.
    auto m = make_reply<tempod_store_verified>(p.op, p.seq, 0);
    const StoreVerification found = verify_objects(store);
    const size_t listed = std::min<size_t>(found.bad.size(), TEMPOD_MAX_STORE_OBJECTS);
    for (size_t i = 0; i < listed; ++i)
      append(&m,
             store_object(ObjectInfo{found.bad[i].key}, found.bad[i].error, found.bad[i].reason));
    auto* v = body<tempod_store_verified>(m);
    v->verified = found.verified;
    v->verified_bytes = found.verified_bytes;
    v->bad = static_cast<uint32_t>(found.bad.size());
    v->listed = static_cast<uint32_t>(listed);
    v->catalog_errors = store.recovery().errors.size();
    return m;
  }
  if (p.op == TEMPOD_OP_STORE_GC) {
    auto m = make_reply<tempod_store_gc_reply>(p.op, p.seq, 0);
    auto* g = body<tempod_store_gc_reply>(m);
    g->catalog_bytes_before = store.catalog_bytes();
    for (const QuarantinedObject& q : store.quarantined()) g->removed += store.remove(q.key) == 0;
    const int r = store.compact();
    g->catalog_bytes_after = store.catalog_bytes();
    g->objects = store.size();
    if (r != 0) return make_reply<tempod_hdr>(p.op, p.seq, r);
    return m;
  }
  int status = -EINVAL;
  struct stat st {};
  if (p.op == TEMPOD_OP_STORE_DELETE) {
    status = ctx_.store_delete(p.key);
  } else if (fstat(p.fd, &st) == 0 && static_cast<uint64_t>(st.st_size) >= p.bytes) {
    void* at = mmap(nullptr, p.bytes, PROT_READ, MAP_SHARED, p.fd, 0);
    if (at == MAP_FAILED) {
      status = -errno;
    } else {
      status = ctx_.store_put(p.key, std::span(static_cast<const std::byte*>(at), p.bytes));
      munmap(at, p.bytes);
    }
  }
  return make_reply<tempod_hdr>(p.op, p.seq, status);
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
    std::vector<std::byte> m = store_op(p);
    if (p.fd >= 0) close(p.fd);
    ctx_.call([&](Stack&) {
      if (Conn* c = find(p.conn)) {
        reply(*c, std::move(m));
        --c->pending;
        update_interest(*c);
      }
    });
  }
}

void Server::close_conn(Conn& c) {
  Stack& s = *stack_;
  size_t ended_transfers = 0;
  for (ClaimId id : c.transfers) {
    ClaimView v;
    if (s.query(id, &v) == 0 && v.state == ClaimState::kTransferring)
      ended_transfers += s.end_transfer(id) == 0;
  }
  size_t cancelled = 0;
  bool had_order = false;
  if (c.engine && --c.engine->conns == 0) {
    had_order = !c.engine->order.empty();
    cancelled = engine_gone(*c.engine);
  }
  if (c.engine)
    options_.log(6, "client " + std::to_string(c.id) + " '" + c.engine->name + "' (pid " +
                        std::to_string(c.pid) + ") gone: " + std::to_string(cancelled) +
                        " claims cancelled, " + std::to_string(ended_transfers) +
                        " transfers ended");
  std::erase_if(waiters_, [&](const Waiter& w) { return w.conn == c.id; });
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
  close(c.fd);
  conns_.erase(c.id);  // c is gone from here on
  if (had_order) merge_orders(s);
  std::lock_guard lock(mu_);
  --open_conns_;
}

size_t Server::engine_gone(Engine& e) {
  // The engine's last connection closed: its live claims are cancelled (transfers that
  // connection began were ended above; others' ended with their connections).
  Stack& s = *stack_;
  size_t cancelled = 0;
  for (const auto& [id, owner] : owners_) {
    ClaimView v;
    if (owner.engine.get() != &e || s.query(id, &v) != 0 || ended(v.state)) continue;
    if (v.state == ClaimState::kTransferring)
      s.end_transfer(id);
    else
      cancelled += s.cancel(id) == 0;
  }
  s.controller().set_share(e.group, 0);
  e.order.clear();
  if (const auto it = engines_.find(e.name); it != engines_.end() && it->second.get() == &e)
    engines_.erase(it);  // owners_ keep the engine's name for listings
  return cancelled;
}

int Server::merge_orders(Stack& s) {
  // Round robin over the engines' queues (Controller::update_orders), oldest connection
  // first: each engine's order is kept, no engine's queue starves another's, and a claim's
  // requests behind it are its own engine's.
  std::vector<const Engine*> by_id;
  for (auto& [id, c] : conns_)  // in id order; an engine's queue at its first connection
    if (c->engine && !c->engine->order.empty() &&
        std::find(by_id.begin(), by_id.end(), c->engine.get()) == by_id.end())
      by_id.push_back(c->engine.get());
  std::vector<std::span<const ClaimId>> orders;
  for (const Engine* e : by_id) orders.emplace_back(e->order);
  return s.update_orders(orders);
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
    if (c) {
      reply_value(*c, TEMPOD_OP_WAIT_READY, it->seq, r == -EAGAIN ? -ETIMEDOUT : r,
                  r == 0 ? static_cast<int64_t>(o) : 0);
      --c->pending;
      update_interest(*c);
    }
    it = waiters_.erase(it);
  }
}

void Server::arm_deadline() {
  TimeNs next = kNever;
  for (const Waiter& w : waiters_) next = std::min(next, w.deadline);
  for (const auto& [tag, m] : metrics_) next = std::min(next, m.deadline);
  if (!hello_due_.empty()) next = std::min(next, hello_due_.front().first);
  next = std::min(next, accept_resume_);
  itimerspec its{};
  if (next != kNever) {
    const TimeNs at = std::max<TimeNs>(next, 1);
    its.it_value.tv_sec = at / kNsPerSec;
    its.it_value.tv_nsec = at % kNsPerSec;
  }
  timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &its, nullptr);
}

void Server::accept_metrics() {
  while (true) {
    const int fd = accept4(metrics_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    if (metrics_.size() >= kMetricsConns) {  // full: this one is closed at once
      close(fd);
      continue;
    }
    const uint64_t tag = kMetricsTag + next_metrics_++;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = tag;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      close(fd);
      continue;
    }
    metrics_[tag] = MetricsConn{fd, {}, {}, saturating_deadline(ctx_.now(), kMetricsDeadline)};
  }
}

void Server::on_metrics(uint64_t tag, uint32_t events) {
  const auto it = metrics_.find(tag);
  if (it == metrics_.end()) return;
  MetricsConn& m = it->second;
  if (m.out.empty() && (events & EPOLLIN) != 0) {
    char buf[kMetricsRequestBytes];
    const ssize_t n = recv(m.fd, buf, kMetricsRequestBytes - m.in.size(), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN)) return close_metrics(tag);
    if (n > 0) m.in.append(buf, static_cast<size_t>(n));
    const bool whole = m.in.find("\r\n\r\n") != std::string::npos;
    if (!whole && m.in.size() < kMetricsRequestBytes) return;  // more to come
    m.out = metrics_reply(whole ? m.in : std::string());
    epoll_event ev{};
    ev.events = EPOLLOUT;
    ev.data.u64 = tag;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, m.fd, &ev);
  } else if ((events & (EPOLLHUP | EPOLLERR)) != 0) {
    return close_metrics(tag);
  }
  if (m.out.empty()) return;
  const ssize_t n = send(m.fd, m.out.data(), m.out.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n < 0 && errno != EAGAIN) return close_metrics(tag);
  if (n > 0) m.out.erase(0, static_cast<size_t>(n));
  if (m.out.empty()) close_metrics(tag);  // one reply per connection
}

std::string Server::metrics_reply(const std::string& request) {
  const auto reply = [](const char* status, const std::string& type, const std::string& body) {
    return std::string("HTTP/1.1 ") + status + "\r\nContent-Type: " + type +
           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
           body;
  };
  const std::string line = request.substr(0, request.find("\r\n"));
  if (line.empty() || (!line.ends_with(" HTTP/1.1") && !line.ends_with(" HTTP/1.0")))
    return reply("400 Bad Request", "text/plain", "a GET request line is needed\n");
  if (line != "GET /metrics HTTP/1.1" && line != "GET /metrics HTTP/1.0")
    return reply("404 Not Found", "text/plain", "only GET /metrics is served\n");
  tempo_counters c;
  to_counters(stack_->stats(), &c);
  tempod_timeliness t{};
  to_timeliness(stack_->controller().stats(), &t);
  return reply("200 OK", "text/plain; version=0.0.4", prometheus_text(c, t));
}

void Server::close_metrics(uint64_t tag) {
  const auto it = metrics_.find(tag);
  if (it == metrics_.end()) return;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second.fd, nullptr);
  close(it->second.fd);
  metrics_.erase(it);
}

void Server::expire_metrics() {
  const TimeNs now = ctx_.now();
  std::vector<uint64_t> late;
  for (const auto& [tag, m] : metrics_)
    if (m.deadline <= now) late.push_back(tag);
  for (uint64_t tag : late) close_metrics(tag);
}

void Server::on_claim_ready(ClaimId) { check_waiters(*stack_); }

void Server::on_claim_ordinary(ClaimId) { check_waiters(*stack_); }

}  // namespace tempo
