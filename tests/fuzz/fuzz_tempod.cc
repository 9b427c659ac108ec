// libFuzzer target: tempod's client protocol (libtempo/client/tempod_proto.h). tempod's
// server (tools/tempod/server.cc) runs in this process over a uring stack on the threaded
// driver, as the daemon runs it; each input is one client connection on its real socket,
// so recv_message, the request decoder (Server::handle) and the cleanup of a connection
// that goes away all run as they do in tempod.
//
// Input: a first byte (bit 0: begin with a valid HELLO, bits 1-2: its features), then
// records [kind u8][length u16 le][length bytes], each one packet:
//   kind bits 0-2, the descriptors sent with it (SCM_RIGHTS): none, a sealed memfd of
//     kPutBytes, a pipe, an empty regular file, a directory, two sealed memfds, an
//     unsealed memfd cut to 0 bytes right after sending (it killed the daemon with SIGBUS),
//     a socket;
//   bit 3, fixed up: the header made valid (version, len, zero status and reserved, op
//     modulo the known ones), claim ids replaced by the last one reported, waits bounded
//     to 1 ms, store keys to 64 (so the store stays small);
//   bit 4: the connection is closed right after this packet (a client gone mid-request);
//   bit 5: the packet is padded past TEMPOD_MAX_MESSAGE.
// The harness writes each packet's seq (its index) so replies can be matched.
//
// Checked: every request of a full header gets exactly one reply (waits, ordinary reads
// and the store's operations later, the others before the next request is sent) with the
// request's op and seq, version 1, a length that matches the packet, a status of 0 or
// -errno; a packet shorter than a header or longer than the maximum closes the connection;
// nothing else does. Once the connection is closed the daemon holds no connection, no live
// claim, no protected byte and no descriptor on a file the client sent one for (every
// descriptor a client sends is closed).
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/tempod_proto.h"
#include "client/wire.h"
#include "config/settings.h"
#include "server.h"
#include "stack/context.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPatience = std::chrono::seconds(10);  // far past any answer's time
constexpr uint16_t kKnownOps = TEMPOD_OP_SET_LAYERS + 1;
constexpr size_t kPutBytes = 4096;  // a memfd's bytes

struct Daemon {
  std::string dir;
  // Where the files and directories a client sends live: on another file system than the
  // store, so a sent file's inode, once freed, is never reused by the store's catalog (a
  // compaction writes a new one) and taken for a descriptor the daemon kept.
  std::string files;
  std::string socket;
  std::unique_ptr<tempo::Context> ctx;
  std::unique_ptr<tempo::Server> server;
};

// The files behind descriptors: what a client sent, and what is open in this process.
using FileIds = std::set<std::pair<dev_t, ino_t>>;

FileIds file_ids(const std::vector<int>& fds) {
  FileIds ids;
  for (int fd : fds) {
    struct stat st {};
    if (fstat(fd, &st) != 0) __builtin_trap();
    ids.emplace(st.st_dev, st.st_ino);
  }
  return ids;
}

// The descriptors open in this process (daemon, harness, libFuzzer) on one of `sent`,
// "fd -> what" a line.
std::string still_open(const FileIds& sent) {
  std::string out;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    struct stat st {};
    if (stat(e.path().c_str(), &st) != 0 || !sent.count({st.st_dev, st.st_ino})) continue;
    std::error_code ec;
    out += e.path().filename().string() + " -> " +
           std::filesystem::read_symlink(e.path(), ec).string() + "\n";
  }
  return out;
}

Daemon* daemon_ptr = nullptr;

void stop_daemon() {
  daemon_ptr->server.reset();
  daemon_ptr->ctx.reset();
  std::filesystem::remove_all(daemon_ptr->dir);
  std::filesystem::remove_all(daemon_ptr->files);
}

Daemon& daemon() {
  if (daemon_ptr != nullptr) return *daemon_ptr;
  daemon_ptr = new Daemon;
  Daemon& d = *daemon_ptr;
  char tmpl[] = "/tmp/fuzz-tempod-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) __builtin_trap();
  d.dir = tmpl;
  char files[] = "/dev/shm/fuzz-tempod-files-XXXXXX";
  if (mkdtemp(files) == nullptr) __builtin_trap();
  d.files = files;
  d.socket = d.dir + "/tempod.sock";
  tempo::Settings s;
  std::string err;
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"device", "uring"},
                                   {"fast_tier_bytes", "16MiB"},
                                   {"budget_bytes", "4MiB"},
                                   {"uring.store_path", d.dir + "/store"},
                                   {"uring.huge_pages", "false"},
                                   {"uring.prefault", "false"}})
    if (s.set(key, value, &err) != 0) __builtin_trap();
  s.uring.share_fast_tier = true;
  if (tempo::Context::create(s, &d.ctx, &err, tempo::DriverKind::kThreaded) != 0) __builtin_trap();
  tempo::ServerOptions o;
  o.socket = d.socket;
  if (tempo::Server::start(*d.ctx, o, &d.server, &err) != 0) __builtin_trap();
  std::atexit(stop_daemon);
  return d;
}

// Reads the input front to back; past its end every read gives zeros.
struct Input {
  const uint8_t* p;
  size_t left;
  uint8_t byte() {
    if (left == 0) return 0;
    --left;
    return *p++;
  }
};

// A memfd of `bytes`, sealed against shrinking (as tempod takes them) or not.
int make_memfd(size_t bytes, bool sealed) {
  const int fd = memfd_create("fuzz-put", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  const std::vector<char> data(bytes, 'x');
  if (fd < 0 || write(fd, data.data(), bytes) != ssize_t(bytes) ||
      (sealed && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0))
    __builtin_trap();
  return fd;
}

// The descriptors of one packet (kind bits 0-2); the client's copies, closed once sent.
std::vector<int> make_fds(unsigned kind) {
  switch (kind & 7u) {
    case 1:
      return {make_memfd(kPutBytes, true)};
    case 6:
      return {make_memfd(kPutBytes, false)};
    case 2: {
      int p[2];
      if (pipe2(p, O_CLOEXEC) != 0) __builtin_trap();
      close(p[1]);
      return {p[0]};
    }
    case 3:
      return {open(daemon().files.c_str(), O_RDWR | O_TMPFILE | O_CLOEXEC, 0600)};
    case 4:
      return {open(daemon().files.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
    case 5:
      return {make_memfd(kPutBytes, true), make_memfd(64, true)};
    case 7: {
      int sv[2];
      if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) __builtin_trap();
      close(sv[1]);
      return {sv[0]};
    }
    default:
      return {};
  }
}

void send_packet(int sock, const std::vector<uint8_t>& msg, const std::vector<int>& fds) {
  iovec iov{const_cast<uint8_t*>(msg.data()), msg.size()};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
  if (!fds.empty()) {
    m.msg_control = control;
    m.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
    std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
  }
  // The daemon may have closed the connection already (a packet it refused): EPIPE is fine.
  const ssize_t n = sendmsg(sock, &m, MSG_NOSIGNAL);
  if (n < 0 && errno != EPIPE && errno != ECONNRESET) {
    std::fprintf(stderr, "sendmsg of %zu bytes, %zu descriptors: %s\n", msg.size(), fds.size(),
                 std::strerror(errno));
    __builtin_trap();
  }
}

class Client {
 public:
  explicit Client(int sock) : sock_(sock) {}
  ~Client() { close(sock_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // A request sent with this op and seq: its reply is due.
  void expect(uint16_t op, uint64_t seq) { due_[seq] = op; }
  // Reads replies until `seq` is answered (or, with seq 0, until nothing is due), up to
  // `patience`. True when it was; false when the time passed or the daemon closed the
  // connection first.
  bool wait_for(uint64_t seq, Clock::duration patience) {
    const auto until = Clock::now() + patience;
    while (seq != 0 ? due_.count(seq) != 0 : !due_.empty()) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
      if (left <= 0) return false;
      pollfd p{sock_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left)) > 0 && !read_one()) return false;
    }
    return true;
  }
  // The daemon closes this connection (after any replies) within the patience.
  void expect_closed() {
    const auto until = Clock::now() + kPatience;
    while (Clock::now() < until) {
      pollfd p{sock_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      if (!read_one()) return;
    }
    __builtin_trap();  // the daemon kept a connection that sent a broken packet
  }
  uint64_t last_claim() const { return last_claim_; }

 private:
  // One reply, checked; false when the peer closed.
  bool read_one() {
    std::vector<std::byte> buf(TEMPOD_MAX_MESSAGE);
    int fd = -1;
    const ssize_t n = tempo::recv_message(sock_, buf.data(), buf.size(), &fd, MSG_DONTWAIT);
    if (fd >= 0) close(fd);  // the fast tier's memory, with the HELLO reply
    if (n == -EAGAIN) return true;
    if (n == 0 || n == -ECONNRESET) return false;
    if (n < ssize_t(sizeof(tempod_hdr))) __builtin_trap();
    tempod_hdr h;
    std::memcpy(&h, buf.data(), sizeof(h));
    const auto it = due_.find(h.seq);
    if (it == due_.end()) {  // a reply to nothing, or a second one
      std::fprintf(stderr, "a reply to nothing: op %u seq %llu status %d len %zd\n", h.op,
                   static_cast<unsigned long long>(h.seq), h.status, n);
      __builtin_trap();
    }
    if (h.op != (it->second | TEMPOD_OP_REPLY) || h.version != TEMPOD_PROTO_VERSION ||
        h.len != size_t(n) || h.reserved != 0 || h.status > 0 || h.status < -4095)
      __builtin_trap();
    if (it->second == TEMPOD_OP_REPORT && h.status == 0) {
      tempod_reply_value v;
      if (size_t(n) != sizeof(v)) __builtin_trap();
      std::memcpy(&v, buf.data(), sizeof(v));
      last_claim_ = static_cast<uint64_t>(v.value);
    }
    due_.erase(it);
    return true;
  }

  int sock_;
  std::map<uint64_t, uint16_t> due_;  // seq -> op of the requests not answered yet
  uint64_t last_claim_ = 0;
};

void fix_up(std::vector<uint8_t>& msg, uint64_t claim) {
  tempod_hdr h;
  std::memcpy(&h, msg.data(), sizeof(h));
  h.op = static_cast<uint16_t>(h.op % kKnownOps);
  h.version = TEMPOD_PROTO_VERSION;
  h.len = static_cast<uint32_t>(msg.size());
  h.status = 0;
  h.reserved = 0;
  std::memcpy(msg.data(), &h, sizeof(h));
  const bool store_op = h.op == TEMPOD_OP_STORE_PUT || h.op == TEMPOD_OP_STORE_DELETE;
  if (msg.size() == sizeof(tempod_claim_arg) && !store_op) {
    tempod_claim_arg a;
    std::memcpy(&a, msg.data(), sizeof(a));
    a.id = claim;
    if (h.op == TEMPOD_OP_WAIT_READY) a.arg = a.arg < 0 ? a.arg : a.arg % 1'000'000;
    std::memcpy(msg.data(), &a, sizeof(a));
  } else if (msg.size() == sizeof(tempod_store_put) && store_op) {
    tempod_store_put p;  // a STORE_DELETE's tempod_key: key, then a reserved zero
    std::memcpy(&p, msg.data(), sizeof(p));
    p.key %= 64;
    if (h.op == TEMPOD_OP_STORE_DELETE) p.bytes = 0;
    std::memcpy(msg.data(), &p, sizeof(p));
  }
}

// Requests answered after later ones may be: waits, ordinary reads, and the store's
// operations (they run on the daemon's put thread).
bool answered_later(uint16_t op) {
  return op == TEMPOD_OP_WAIT_READY || op == TEMPOD_OP_ORDINARY_READ || op == TEMPOD_OP_STORE_PUT ||
         op == TEMPOD_OP_STORE_DELETE || op == TEMPOD_OP_STORE_LIST ||
         op == TEMPOD_OP_STORE_VERIFY || op == TEMPOD_OP_STORE_GC;
}

// Waits (up to the patience) until `done`; else says why (`report`) and traps.
template <typename F, typename R = void (*)()>
void eventually(
    F done, R report = [] {}) {
  const auto until = Clock::now() + kPatience;
  while (!done()) {
    if (Clock::now() > until) {
      report();
      __builtin_trap();
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Daemon& d = daemon();
  const int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, d.socket.c_str(), d.socket.size() + 1);
  if (connect(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) __builtin_trap();
  FileIds sent;  // every file a descriptor was sent for
  {
    Client client(sock);
    Input in{data, size};
    uint64_t seq = 0;
    const uint8_t first = in.byte();
    if ((first & 1u) != 0) {
      tempod_hello hello{};
      hello.hdr = {TEMPOD_OP_HELLO, TEMPOD_PROTO_VERSION, sizeof(hello), ++seq, 0, 0};
      hello.features = (first >> 1) & 3u;
      std::memcpy(hello.engine, "fuzz", 4);
      std::vector<uint8_t> msg(sizeof(hello));
      std::memcpy(msg.data(), &hello, sizeof(hello));
      client.expect(TEMPOD_OP_HELLO, seq);
      send_packet(sock, msg, {});
      if (!client.wait_for(seq, kPatience)) __builtin_trap();
    }
    bool open = true;
    while (open && in.left > 0) {
      const uint8_t kind = in.byte();
      size_t len = in.byte();
      len |= size_t{in.byte()} << 8;
      std::vector<uint8_t> msg(len);
      for (auto& b : msg) b = in.byte();
      const bool oversized = (kind & 0x20u) != 0;
      if (oversized) msg.resize(TEMPOD_MAX_MESSAGE + 1);
      ++seq;
      if (msg.size() >= 16) std::memcpy(msg.data() + 8, &seq, sizeof(seq));
      const bool whole = msg.size() >= sizeof(tempod_hdr) && !oversized;
      if (whole && (kind & 8u) != 0) fix_up(msg, client.last_claim());
      uint16_t op = 0;
      if (whole) std::memcpy(&op, msg.data(), sizeof(op));
      if (whole) client.expect(op, seq);
      const std::vector<int> fds = make_fds(kind);
      const FileIds ids = file_ids(fds);
      sent.insert(ids.begin(), ids.end());
      send_packet(sock, msg, fds);
      if ((kind & 7u) == 6 && ftruncate(fds[0], 0) != 0) __builtin_trap();
      for (int fd : fds) close(fd);
      if (!whole) {
        client.expect_closed();
        open = false;
      } else if ((kind & 0x10u) != 0) {
        open = false;  // gone mid-request
      } else if (!answered_later(op) && !client.wait_for(seq, kPatience)) {
        __builtin_trap();  // a request of a whole header closed the connection
      }
    }
    // Replies still due (waits, reads, puts) are awaited a little, then the client goes.
    if (open) client.wait_for(0, std::chrono::milliseconds(20));
  }
  // The daemon notices the hangup, drops the connection and cancels what it held.
  eventually([&] { return d.server->connections() == 0; });
  eventually([&] {
    return d.ctx->call([](tempo::Stack& s) {
      const tempo::StackStats st = s.stats();
      return st.controller.live == 0 && st.provider.ledger_bytes == 0 &&
             st.device_stats.pinned_bytes == 0;
    });
  });
  eventually(
      [&] { return still_open(sent).empty(); },
      [&] { std::fprintf(stderr, "sent descriptors left open:\n%s", still_open(sent).c_str()); });
  return 0;
}
