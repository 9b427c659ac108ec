#include "client/daemon_client.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "client/tempod_proto.h"
#include "client/wire.h"

namespace tempo {
namespace {

template <typename T>
T make_request(uint16_t op) {
  T m{};
  m.hdr.op = op;
  m.hdr.version = TEMPOD_PROTO_VERSION;
  m.hdr.len = sizeof(T);
  return m;
}

// The reply's payload as T, or nullptr when the reply is shorter.
template <typename T>
const T* reply_as(const std::vector<std::byte>& bytes) {
  return bytes.size() >= sizeof(T) ? reinterpret_cast<const T*>(bytes.data()) : nullptr;
}

// Maps `bytes` of `fd` read-only at a multiple of `align`. nullptr on failure.
void* map_aligned(int fd, uint64_t bytes, uint64_t align, void** mapping, size_t* mapping_bytes) {
  const size_t len = bytes + align;
  void* p = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const uintptr_t at = (reinterpret_cast<uintptr_t>(p) + align - 1) & ~(uintptr_t(align) - 1);
  void* m = mmap(reinterpret_cast<void*>(at), bytes, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
  if (m == MAP_FAILED) {
    munmap(p, len);
    return nullptr;
  }
  *mapping = p;
  *mapping_bytes = len;
  return m;
}

// Sets SO_SNDTIMEO or SO_RCVTIMEO of `sock` to `ns` (0: none). 0, or -1 with errno.
int set_timeout(int sock, int which, TimeNs ns) {
  const timeval tv{static_cast<time_t>(ns / kNsPerSec),
                   static_cast<suseconds_t>(ns % kNsPerSec / kNsPerUs)};
  return setsockopt(sock, SOL_SOCKET, which, &tv, sizeof(tv));
}

}  // namespace

int DaemonClient::connect(const std::string& socket, const std::string& engine,
                          std::unique_ptr<DaemonClient>* out, std::string* error, TimeNs timeout) {
  if (timeout <= 0) {
    *error = "tempod at '" + socket + "': the connect timeout must be positive";
    return -EINVAL;
  }
  std::unique_ptr<DaemonClient> c(new DaemonClient());
  c->socket_ = socket;
  c->timeout_ = timeout;
  c->engine_ = engine;  // "": the daemon names it after the connection
  if (c->engine_.size() >= sizeof(tempod_hello{}.engine)) {
    *error = "daemon.engine '" + engine + "' is longer than 23 bytes";
    return -EINVAL;
  }
  std::lock_guard lock(c->mu_);
  if (const int r = c->connect_locked(error); r != 0) return r;
  *out = std::move(c);
  return 0;
}

DaemonClient::~DaemonClient() {
  if (sock_ >= 0) close(sock_);
  for (const Mapping& m : mappings_) munmap(m.addr, m.bytes);
}

int DaemonClient::connect_locked(std::string* error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_.size() >= sizeof(addr.sun_path)) {
    *error = "daemon.socket '" + socket_ + "': path too long";
    return -ENAMETOOLONG;
  }
  std::memcpy(addr.sun_path, socket_.c_str(), socket_.size() + 1);
  const int s = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (s < 0) return -errno;
  // A connect into a full listener waits up to SO_SNDTIMEO (then EAGAIN); the HELLO reply
  // gets what is left of the timeout as SO_RCVTIMEO.
  const auto start = std::chrono::steady_clock::now();
  const std::string ms = std::to_string(timeout_ / kNsPerMs) + " ms";
  if (set_timeout(s, SO_SNDTIMEO, timeout_) != 0 ||
      ::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    close(s);
    if (err == EAGAIN) {
      *error = "tempod at '" + socket_ + "': no connection within " + ms +
               " (the daemon is stuck or its listener is full)";
      return -ETIMEDOUT;
    }
    *error = "tempod at '" + socket_ + "': " + std::strerror(err) + " (is tempod running?)";
    return -err;
  }
  const TimeNs spent =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  auto hello = make_request<tempod_hello>(TEMPOD_OP_HELLO);
  hello.hdr.seq = next_seq_++;
  hello.features = TEMPOD_F_ALL;
  std::memcpy(hello.engine, engine_.c_str(), engine_.size());
  tempod_hello_reply reply{};
  int fd = -1;
  ssize_t n = set_timeout(s, SO_RCVTIMEO, std::max<TimeNs>(timeout_ - spent, kNsPerMs)) == 0
                  ? send_message(s, &hello, sizeof(hello), -1, 0)
                  : -errno;
  // A daemon that refused the connection at accept sent its reason and closed: the send
  // may fail, and the close may be seen first (ECONNRESET when our HELLO was still
  // unread), the reason queued behind it.
  if (n >= 0 || n == -EPIPE || n == -ECONNRESET) n = recv_message(s, &reply, sizeof(reply), &fd, 0);
  if (n == -ECONNRESET) {
    const ssize_t again = recv_message(s, &reply, sizeof(reply), &fd, MSG_DONTWAIT);
    if (again != -EAGAIN) n = again;
  }
  int r = n == -EAGAIN         ? -ETIMEDOUT
          : n < 0              ? static_cast<int>(n)
          : n != sizeof(reply) ? -EPROTO
                               : reply.hdr.status;
  // The fast tier's memory, or on kmod the device's whole range: extents point into it.
  const bool kmod = (reply.features & TEMPOD_F_KMOD_FD) != 0;
  if (r == 0 && (kmod || (reply.features & TEMPOD_F_FAST_TIER_FD) != 0) &&
      reply.fast_tier_bytes > 0) {
    Mapping m{};
    void* at = fd < 0 ? nullptr
                      : map_aligned(fd, reply.fast_tier_bytes,
                                    reply.fast_tier_align ? reply.fast_tier_align : 4096, &m.addr,
                                    &m.bytes);
    if (at == nullptr) {
      r = fd < 0 ? -EPROTO : -errno;
    } else {
      mappings_.push_back(m);
      fast_tier_ = static_cast<const std::byte*>(at);
      fast_tier_bytes_ = reply.fast_tier_bytes;
      device_map_ = kmod;
    }
  }
  if (fd >= 0) close(fd);
  // Calls wait as long as their replies take (WAIT_READY has its own deadline).
  if (r == 0 && (set_timeout(s, SO_SNDTIMEO, 0) != 0 || set_timeout(s, SO_RCVTIMEO, 0) != 0))
    r = -errno;
  if (r != 0) {
    close(s);
    const std::string at = "tempod at '" + socket_ + "': ";
    if (r == -ETIMEDOUT)
      *error = at + "no HELLO reply within " + ms + " (the daemon is stuck)";
    else if (r == -EBUSY)
      *error = at + "connection limit " + std::to_string(reply.client_id) +
               " reached (daemon.max_connections)";
    else if (r == -EMFILE)
      *error = at + "the daemon is out of file descriptors";
    else
      *error = at + "hello: " + std::strerror(-r);
    return r;
  }
  if (device_[0] == '\0')
    std::memcpy(device_, reply.device, sizeof(reply.device));  // read unlocked
  reads_spread_.store((reply.features & TEMPOD_F_TTU_SPREAD) != 0, std::memory_order_relaxed);
  std::lock_guard send(send_mu_);
  sock_ = s;
  ++connection_;
  return 0;
}

void DaemonClient::drop_connection_locked() {
  std::lock_guard send(send_mu_);
  if (sock_ >= 0) close(sock_);
  sock_ = -1;
  ++connection_;
  replies_.clear();
}

int DaemonClient::call(void* req, size_t len, std::vector<std::byte>* reply, int pass_fd) {
  auto* hdr = static_cast<tempod_hdr*>(req);
  std::unique_lock lock(mu_);
  if (sock_ < 0) {
    std::string error;
    if (const int r = connect_locked(&error); r != 0) return r;
  }
  const uint64_t seq = next_seq_++;
  const uint64_t connection = connection_;
  const int sock = sock_;
  hdr->seq = seq;
  lock.unlock();
  ssize_t sent;
  {
    std::lock_guard send(send_mu_);
    sent = connection_ == connection ? send_message(sock, req, len, pass_fd, 0) : -ECONNRESET;
  }
  lock.lock();
  if (sent < 0) {
    if (connection_ == connection) drop_connection_locked();
    cv_.notify_all();
    return -ECONNRESET;
  }
  while (true) {
    if (auto it = replies_.find(seq); it != replies_.end()) {
      Reply r = std::move(it->second);
      replies_.erase(it);
      const int status = reinterpret_cast<const tempod_hdr*>(r.bytes.data())->status;
      if (reply) *reply = std::move(r.bytes);
      return status;
    }
    if (connection_ != connection) return -ECONNRESET;
    if (reading_) {
      cv_.wait(lock);
      continue;
    }
    reading_ = true;
    lock.unlock();
    rx_.resize(TEMPOD_MAX_MESSAGE);
    int fd = -1;
    const ssize_t n = recv_message(sock, rx_.data(), rx_.size(), &fd, 0);
    if (fd >= 0) close(fd);
    lock.lock();
    reading_ = false;
    if (n < static_cast<ssize_t>(sizeof(tempod_hdr))) {
      if (connection_ == connection) drop_connection_locked();
      cv_.notify_all();
      return -ECONNRESET;
    }
    const uint64_t got = reinterpret_cast<const tempod_hdr*>(rx_.data())->seq;
    replies_[got] = Reply{std::vector<std::byte>(rx_.begin(), rx_.begin() + n)};
    cv_.notify_all();
  }
}

template <typename Head>
int DaemonClient::call_counted(Head* head, const void* items, size_t bytes,
                               std::vector<std::byte>* reply) {
  std::vector<std::byte> buf(sizeof(Head) + bytes);
  head->hdr.len = static_cast<uint32_t>(buf.size());
  std::memcpy(buf.data(), head, sizeof(Head));
  if (bytes) std::memcpy(buf.data() + sizeof(Head), items, bytes);
  return call(buf.data(), buf.size(), reply);
}

int DaemonClient::claim_op(uint16_t op, tempo_claim_id id, int64_t arg, int64_t* value) {
  auto m = make_request<tempod_claim_arg>(op);
  m.id = id;
  m.arg = arg;
  std::vector<std::byte> reply;
  const int r = call(&m, sizeof(m), value ? &reply : nullptr);
  if (r == 0 && value) {
    const auto* v = reply_as<tempod_reply_value>(reply);
    if (!v) return -EPROTO;
    *value = v->value;
  }
  return r;
}

int DaemonClient::now(int64_t* ns) {
  tempod_hdr m{TEMPOD_OP_NOW, TEMPOD_PROTO_VERSION, sizeof(tempod_hdr), 0, 0, 0};
  std::vector<std::byte> reply;
  const int r = call(&m, sizeof(m), &reply);
  if (r != 0) return r;
  const auto* v = reply_as<tempod_reply_value>(reply);
  if (!v) return -EPROTO;
  *ns = v->value;
  return 0;
}

int DaemonClient::tick() {
  tempod_hdr m{TEMPOD_OP_TICK, TEMPOD_PROTO_VERSION, sizeof(tempod_hdr), 0, 0, 0};
  return call(&m, sizeof(m));
}

int DaemonClient::stats(tempo_counters* s) {
  tempod_hdr m{TEMPOD_OP_STATS, TEMPOD_PROTO_VERSION, sizeof(tempod_hdr), 0, 0, 0};
  std::vector<std::byte> reply;
  const int r = call(&m, sizeof(m), &reply);
  if (r != 0) return r;
  if (reply.size() != sizeof(tempod_hdr) + sizeof(tempo_counters)) return -EPROTO;
  std::memcpy(s, reply.data() + sizeof(tempod_hdr), sizeof(*s));
  return 0;
}

int DaemonClient::report(const tempo_object* objects, size_t count, int64_t ttu_ns,
                         tempo_claim_id* id) {
  if (count > TEMPOD_MAX_OBJECTS) return -E2BIG;
  auto m = make_request<tempod_report>(TEMPOD_OP_REPORT);
  m.ttu_ns = ttu_ns;
  m.count = static_cast<uint32_t>(count);
  std::vector<std::byte> reply;
  const int r = call_counted(&m, objects, count * sizeof(tempo_object), &reply);
  if (r != 0) return r;
  const auto* v = reply_as<tempod_reply_value>(reply);
  if (!v) return -EPROTO;
  *id = static_cast<tempo_claim_id>(v->value);
  return 0;
}

int DaemonClient::revise(tempo_claim_id id, int64_t ttu_ns) {
  return claim_op(TEMPOD_OP_REVISE, id, ttu_ns);
}

int DaemonClient::set_layers(tempo_claim_id id, uint32_t groups, int64_t per_group_ns) {
  auto m = make_request<tempod_layers>(TEMPOD_OP_SET_LAYERS);
  m.id = id;
  m.per_group_ns = per_group_ns;
  m.groups = groups;
  return call(&m, sizeof(m));
}

int DaemonClient::order(const tempo_claim_id* ids, size_t count) {
  if (count > TEMPOD_MAX_ORDER) return -E2BIG;
  auto m = make_request<tempod_order>(TEMPOD_OP_ORDER);
  m.count = static_cast<uint32_t>(count);
  return call_counted(&m, ids, count * sizeof(uint64_t));
}

int DaemonClient::request_retrieval(tempo_claim_id id, int* outcome) {
  int64_t v = 0;
  const int r = claim_op(TEMPOD_OP_RETRIEVAL, id, 0, &v);
  if (r == 0) *outcome = static_cast<int>(v);
  return r;
}

int DaemonClient::query(tempo_claim_id id, tempo_claim_info* info) {
  auto m = make_request<tempod_claim_arg>(TEMPOD_OP_QUERY);
  m.id = id;
  std::vector<std::byte> reply;
  const int r = call(&m, sizeof(m), &reply);
  if (r != 0) return r;
  if (reply.size() != sizeof(tempod_hdr) + sizeof(tempo_claim_info)) return -EPROTO;
  std::memcpy(info, reply.data() + sizeof(tempod_hdr), sizeof(*info));
  return 0;
}

int DaemonClient::transfer_begin(tempo_claim_id id) {
  return claim_op(TEMPOD_OP_TRANSFER_BEGIN, id, 0);
}

int DaemonClient::transfer_end(tempo_claim_id id) {
  return claim_op(TEMPOD_OP_TRANSFER_END, id, 0);
}

int DaemonClient::cancel(tempo_claim_id id) { return claim_op(TEMPOD_OP_CANCEL, id, 0); }

int DaemonClient::wait_ready(tempo_claim_id id, int64_t timeout_ns, int* outcome) {
  int64_t v = 0;
  const int r = claim_op(TEMPOD_OP_WAIT_READY, id, timeout_ns, &v);
  if (r == 0) *outcome = static_cast<int>(v);
  return r;
}

int DaemonClient::extents(tempo_claim_id id, tempo_extent* out, size_t capacity, size_t* count) {
  auto m = make_request<tempod_claim_arg>(TEMPOD_OP_EXTENTS);
  m.id = id;
  std::vector<std::byte> reply;
  const int r = call(&m, sizeof(m), &reply);
  if (r != 0) return r;
  const auto* v = reply_as<tempod_reply_value>(reply);
  if (!v || v->value < 0 ||
      reply.size() != sizeof(*v) + static_cast<size_t>(v->value) * sizeof(tempod_extent))
    return -EPROTO;
  *count = static_cast<size_t>(v->value);
  if (capacity < *count) return -ENOSPC;
  std::lock_guard lock(mu_);
  if (fast_tier_ == nullptr) return -EOPNOTSUPP;
  const auto* e = reinterpret_cast<const tempod_extent*>(reply.data() + sizeof(*v));
  for (size_t i = 0; i < *count; ++i) out[i] = {fast_tier_ + e[i].offset, e[i].bytes};
  return 0;
}

int DaemonClient::ordinary_read(tempo_claim_id id) {
  return claim_op(TEMPOD_OP_ORDINARY_READ, id, 0);
}

int DaemonClient::store_put(uint64_t key, const void* data, size_t bytes) {
  if (bytes == 0) return -EINVAL;
  const int fd = memfd_create("tempo-put", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -errno;
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = write(fd, static_cast<const char*>(data) + done, bytes - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = -errno;
      close(fd);
      return err;
    }
    done += static_cast<size_t>(n);
  }
  // tempod takes only a file that can no longer change (it maps it).
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    const int err = -errno;
    close(fd);
    return err;
  }
  auto m = make_request<tempod_store_put>(TEMPOD_OP_STORE_PUT);
  m.key = key;
  m.bytes = bytes;
  const int r = call(&m, sizeof(m), nullptr, fd);
  close(fd);
  return r;
}

int DaemonClient::kmod_add_objects(const tempo_kmod_object* objects, size_t count) {
  if (count > TEMPOD_MAX_KMOD_OBJECTS) return -E2BIG;
  auto m = make_request<tempod_kmod_objects>(TEMPOD_OP_KMOD_ADD_OBJECTS);
  m.count = static_cast<uint32_t>(count);
  return call_counted(&m, objects, count * sizeof(tempo_kmod_object));
}

int DaemonClient::store_lookup(const uint64_t* keys, size_t count, size_t* prefix) {
  // Past one message's keys, the next message continues where a full prefix left off.
  size_t done = 0;
  while (true) {
    const size_t n = std::min(count - done, size_t{TEMPOD_MAX_KEYS});
    auto m = make_request<tempod_keys>(TEMPOD_OP_STORE_LOOKUP);
    m.count = static_cast<uint32_t>(n);
    std::vector<std::byte> reply;
    if (const int r = call_counted(&m, keys + done, n * sizeof(uint64_t), &reply); r != 0) return r;
    const auto* v = reply_as<tempod_reply_value>(reply);
    if (!v || v->value < 0 || static_cast<size_t>(v->value) > n) return -EPROTO;
    done += static_cast<size_t>(v->value);
    if (static_cast<size_t>(v->value) < n || done == count) break;
  }
  *prefix = done;
  return 0;
}

int DaemonClient::store_delete(uint64_t key) {
  auto m = make_request<tempod_key>(TEMPOD_OP_STORE_DELETE);
  m.key = key;
  return call(&m, sizeof(m));
}

int DaemonClient::fast_tier(void** base, uint64_t* bytes) {
  std::lock_guard lock(mu_);
  if (fast_tier_ == nullptr || device_map_) return -EOPNOTSUPP;
  *base = const_cast<std::byte*>(fast_tier_);
  *bytes = fast_tier_bytes_;
  return 0;
}

int DaemonClient::batch(std::span<const BatchOp> ops, std::vector<BatchResult>* results) {
  results->assign(ops.size(), BatchResult{0, 0});
  size_t next = 0;
  while (next < ops.size()) {
    // As many entries as fit in one message.
    std::vector<std::byte> buf(sizeof(tempod_batch));
    size_t first = next;
    for (; next < ops.size(); ++next) {
      const BatchOp& o = ops[next];
      const size_t payload = o.spread ? sizeof(tempod_ttu_spread) : o.objects.size_bytes();
      const size_t add = sizeof(tempod_batch_entry) + payload;
      if (buf.size() + add > TEMPOD_MAX_MESSAGE) {
        if (next == first) return -E2BIG;
        break;
      }
      tempod_batch_entry e{};
      e.op = o.op;
      e.count = static_cast<uint32_t>(o.objects.size());
      e.id = o.id;
      e.arg = o.arg;
      const size_t at = buf.size();
      buf.resize(at + add);
      std::memcpy(buf.data() + at, &e, sizeof(e));
      if (o.spread) {
        tempod_ttu_spread q{};
        std::copy(o.spread->at.begin(), o.spread->at.end(), q.at);
        std::memcpy(buf.data() + at + sizeof(e), &q, sizeof(q));
      } else if (!o.objects.empty()) {
        std::memcpy(buf.data() + at + sizeof(e), o.objects.data(), o.objects.size_bytes());
      }
    }
    auto m = make_request<tempod_batch>(TEMPOD_OP_BATCH);
    m.hdr.len = static_cast<uint32_t>(buf.size());
    m.count = static_cast<uint32_t>(next - first);
    std::memcpy(buf.data(), &m, sizeof(m));
    std::vector<std::byte> reply;
    if (const int r = call(buf.data(), buf.size(), &reply); r != 0) return r;
    const auto* v = reply_as<tempod_reply_value>(reply);
    if (!v || v->value != static_cast<int64_t>(next - first) ||
        reply.size() != sizeof(*v) + (next - first) * sizeof(tempod_batch_result))
      return -EPROTO;
    for (size_t i = first; i < next; ++i) {
      tempod_batch_result r;
      std::memcpy(&r, reply.data() + sizeof(*v) + (i - first) * sizeof(r), sizeof(r));
      (*results)[i] = BatchResult{r.status, r.value};
    }
  }
  return 0;
}

int DaemonClient::label(tempo_claim_id id, const std::string& request) {
  auto m = make_request<tempod_label>(TEMPOD_OP_LABEL);
  if (request.size() >= sizeof(m.request)) return -EINVAL;
  m.id = id;
  std::memcpy(m.request, request.data(), request.size());
  return call(&m, sizeof(m));
}

int DaemonClient::claims(tempo_claim_id after, uint32_t max, std::vector<ClaimEntry>* out) {
  auto m = make_request<tempod_claims>(TEMPOD_OP_CLAIMS);
  m.after = after;
  m.max = max;
  std::vector<std::byte> reply;
  if (const int r = call(&m, sizeof(m), &reply); r != 0) return r;
  const auto* v = reply_as<tempod_reply_value>(reply);
  if (!v || v->value < 0 ||
      reply.size() != sizeof(*v) + static_cast<size_t>(v->value) * sizeof(tempod_claim_entry))
    return -EPROTO;
  out->clear();
  for (int64_t i = 0; i < v->value; ++i) {
    tempod_claim_entry e;
    std::memcpy(&e, reply.data() + sizeof(*v) + static_cast<size_t>(i) * sizeof(e), sizeof(e));
    e.engine[sizeof(e.engine) - 1] = '\0';
    e.request[sizeof(e.request) - 1] = '\0';
    out->push_back(ClaimEntry{e.id, e.info, e.engine, e.client, e.request});
  }
  return 0;
}

int DaemonClient::store_list(bool quarantined, std::vector<tempod_store_object>* out) {
  out->clear();
  auto m = make_request<tempod_store_list>(TEMPOD_OP_STORE_LIST);
  m.max = TEMPOD_MAX_STORE_OBJECTS;
  m.first = 1;
  m.quarantined = quarantined ? 1 : 0;
  while (true) {
    std::vector<std::byte> reply;
    if (const int r = call(&m, sizeof(m), &reply); r != 0) return r;
    const auto* v = reply_as<tempod_reply_value>(reply);
    if (!v || v->value < 0 || v->value > int64_t{TEMPOD_MAX_STORE_OBJECTS} ||
        reply.size() != sizeof(*v) + static_cast<size_t>(v->value) * sizeof(tempod_store_object))
      return -EPROTO;
    const size_t n = static_cast<size_t>(v->value);
    const size_t at = out->size();
    out->resize(at + n);
    if (n)
      std::memcpy(out->data() + at, reply.data() + sizeof(*v), n * sizeof(tempod_store_object));
    if (n < TEMPOD_MAX_STORE_OBJECTS) return 0;
    if (!m.first && out->back().key <= m.after) return -EPROTO;  // keys must grow
    m.after = out->back().key;
    m.first = 0;
  }
}

int DaemonClient::store_verify(tempod_store_verified* summary,
                               std::vector<tempod_store_object>* bad) {
  tempod_hdr m{TEMPOD_OP_STORE_VERIFY, TEMPOD_PROTO_VERSION, sizeof(tempod_hdr), 0, 0, 0};
  std::vector<std::byte> reply;
  if (const int r = call(&m, sizeof(m), &reply); r != 0) return r;
  const auto* v = reply_as<tempod_store_verified>(reply);
  if (!v || v->listed > v->bad ||
      reply.size() != sizeof(*v) + size_t{v->listed} * sizeof(tempod_store_object))
    return -EPROTO;
  *summary = *v;
  bad->resize(v->listed);
  if (v->listed)
    std::memcpy(bad->data(), reply.data() + sizeof(*v), v->listed * sizeof(tempod_store_object));
  return 0;
}

int DaemonClient::header_only(uint16_t op, void* out, size_t size) {
  tempod_hdr m{op, TEMPOD_PROTO_VERSION, sizeof(tempod_hdr), 0, 0, 0};
  std::vector<std::byte> reply;
  if (const int r = call(&m, sizeof(m), &reply); r != 0) return r;
  if (reply.size() != size) return -EPROTO;
  std::memcpy(out, reply.data(), size);
  return 0;
}

int DaemonClient::store_gc(tempod_store_gc_reply* out) {
  return header_only(TEMPOD_OP_STORE_GC, out, sizeof(*out));
}

int DaemonClient::timeliness(tempod_timeliness* out) {
  return header_only(TEMPOD_OP_TIMELINESS, out, sizeof(*out));
}

}  // namespace tempo
