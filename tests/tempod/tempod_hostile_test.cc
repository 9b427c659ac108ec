// tempod against hostile clients on its real socket: garbage, truncated, oversized and
// wrong-version packets, descriptors where none belong or of the wrong kind, clients that go
// away mid-request. Each bad packet gets its errno (or, without a header to answer, its
// connection closed), the daemon keeps serving a client connected all along, and nothing
// leaks: the daemon's descriptors return to their count, no claim stays live and no byte
// stays protected. The protocol is spoken raw here (tempod_proto.h), as a hostile client
// would; tests/fuzz/fuzz_tempod.cc fuzzes the same decoder.
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "client/tempod_proto.h"
#include "tempod_process.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
constexpr auto kPatience = std::chrono::seconds(20);  // for what a loaded machine may delay

template <typename T>
std::vector<char> bytes_of(const T& v) {
  std::vector<char> b(sizeof(v));
  std::memcpy(b.data(), &v, sizeof(v));
  return b;
}

tempod_hdr header(uint16_t op, size_t len, uint64_t seq) {
  return tempod_hdr{op, TEMPOD_PROTO_VERSION, static_cast<__u32>(len), seq, 0, 0};
}

tempod_claim_arg claim_arg(uint16_t op, uint64_t seq, uint64_t id, int64_t arg = 0) {
  return tempod_claim_arg{header(op, sizeof(tempod_claim_arg), seq), id, arg};
}

// A memfd of `bytes` (zeros); sealed as tempod wants it (it can no longer shrink) or not.
int make_memfd(size_t bytes, bool sealed) {
  const int fd = memfd_create("hostile-put", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(ftruncate(fd, static_cast<off_t>(bytes)), 0);
  if (sealed) {
    EXPECT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  }
  return fd;
}

// One raw protocol connection.
class Conn {
 public:
  explicit Conn(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~Conn() { close_now(); }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  bool ok() const { return fd_ >= 0; }
  void close_now() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

  // Sends one packet with `fds` beside it; false when the daemon has closed this connection.
  bool send(const std::vector<char>& msg, const std::vector<int>& fds = {}) {
    iovec iov{const_cast<char*>(msg.data()), msg.size()};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    std::vector<char> control(CMSG_SPACE(fds.size() * sizeof(int)));
    if (!fds.empty()) {
      m.msg_control = control.data();
      m.msg_controllen = control.size();
      cmsghdr* c = CMSG_FIRSTHDR(&m);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
      std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
    }
    return sendmsg(fd_, &m, MSG_NOSIGNAL) == ssize_t(msg.size());
  }
  // Sends one packet, waiting up to `patience` for room in the socket; false if none came.
  bool send_within(const std::vector<char>& msg, std::chrono::milliseconds patience) {
    pollfd p{fd_, POLLOUT, 0};
    return poll(&p, 1, static_cast<int>(patience.count())) == 1 &&
           ::send(fd_, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT) == ssize_t(msg.size());
  }
  // The next reply (a descriptor beside it is closed); an empty vector when the daemon
  // closed the connection or nothing came within the patience.
  std::vector<char> receive() {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::chrono::milliseconds(kPatience).count())) != 1) return {};
    std::vector<char> buf(TEMPOD_MAX_MESSAGE);
    iovec iov{buf.data(), buf.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof(control);
    const ssize_t n = recvmsg(fd_, &m, MSG_CMSG_CLOEXEC);
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
      int got;
      std::memcpy(&got, CMSG_DATA(c), sizeof(got));
      close(got);
    }
    buf.resize(n > 0 ? size_t(n) : 0);
    return buf;
  }
  // Sends and returns the reply's status, checking the reply answers this request.
  int roundtrip(const std::vector<char>& msg, const std::vector<int>& fds = {}) {
    tempod_hdr req;
    std::memcpy(&req, msg.data(), sizeof(req));
    if (!send(msg, fds)) return 1;
    const std::vector<char> r = receive();
    if (r.size() < sizeof(tempod_hdr)) return 2;  // closed: no status
    tempod_hdr h;
    std::memcpy(&h, r.data(), sizeof(h));
    EXPECT_EQ(h.op, req.op | TEMPOD_OP_REPLY);
    EXPECT_EQ(h.seq, req.seq);
    EXPECT_EQ(h.len, r.size());
    return h.status;
  }
  // True when the daemon closes this connection (after any replies still coming).
  bool closed_by_daemon() {
    for (std::vector<char> r = receive(); !r.empty(); r = receive()) {
    }
    pollfd p{fd_, POLLIN, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & (POLLIN | POLLHUP)) != 0;
  }
  // HELLO without an engine name: each connection is an engine of its own, so its claims
  // go with it.
  int hello(uint32_t features = 0) {
    tempod_hello h{};
    h.hdr = header(TEMPOD_OP_HELLO, sizeof(h), 1);
    h.features = features;
    return roundtrip(bytes_of(h));
  }
  // A claim on `bytes` of object `key`, for an hour; its id.
  uint64_t report(uint64_t key, uint64_t bytes) {
    tempod_report r{header(TEMPOD_OP_REPORT, sizeof(tempod_report) + sizeof(tempo_object), 7),
                    3'600'000'000'000, 1, 0};
    std::vector<char> msg = bytes_of(r);
    const tempo_object o{key, bytes};
    const std::vector<char> obj = bytes_of(o);
    msg.insert(msg.end(), obj.begin(), obj.end());
    EXPECT_TRUE(send(msg));
    const std::vector<char> reply = receive();
    tempod_reply_value v{};
    EXPECT_EQ(reply.size(), sizeof(v));
    std::memcpy(&v, reply.data(), std::min(reply.size(), sizeof(v)));
    EXPECT_EQ(v.hdr.status, 0);
    return static_cast<uint64_t>(v.value);
  }
  tempo_counters stats() {
    const std::vector<char> req = bytes_of(header(TEMPOD_OP_STATS, sizeof(tempod_hdr), 9));
    EXPECT_TRUE(send(req));
    const std::vector<char> r = receive();
    tempo_counters s{};
    EXPECT_EQ(r.size(), sizeof(tempod_hdr) + sizeof(s));
    if (r.size() == sizeof(tempod_hdr) + sizeof(s))
      std::memcpy(&s, r.data() + sizeof(tempod_hdr), sizeof(s));
    return s;
  }

 private:
  int fd_ = -1;
};

class TempodHostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    files_ = tempo::test::make_tempod_dir("tempod-hostile");
    ASSERT_FALSE(files_.dir.empty());
    daemon_ = tempo::test::spawn_tempod(TEMPOD_PATH, files_.dir);
    ASSERT_GT(daemon_, 0);
    const auto until = Clock::now() + kPatience;
    while (Clock::now() < until) {
      Conn c(files_.socket);
      if (c.ok() && c.hello() == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // A client connected all along, served between the hostile ones.
    bystander_ = std::make_unique<Conn>(files_.socket);
    ASSERT_EQ(bystander_->hello(), 0) << "tempod did not start serving " << files_.socket;
    baseline_fds_ = daemon_fds();
  }
  void TearDown() override {
    bystander_.reset();
    tempo::test::stop_tempod(&daemon_);
    fs::remove_all(files_.dir);
  }

  size_t daemon_fds() const {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e :
         fs::directory_iterator("/proc/" + std::to_string(daemon_) + "/fd"))
      ++n;
    return n;
  }
  bool daemon_alive() const { return waitpid(daemon_, nullptr, WNOHANG) == 0; }
  // The daemon serves the bystander and, once the hostile clients are gone, holds no more
  // descriptors than before them, no live claim and no protected byte.
  void expect_nothing_left() {
    ASSERT_TRUE(daemon_alive());
    const auto until = Clock::now() + kPatience;
    tempo_counters s{};
    size_t fds = 0;
    do {
      s = bystander_->stats();
      fds = daemon_fds();
      if (fds == baseline_fds_ && s.claims_live == 0 && s.ledger_bytes == 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } while (Clock::now() < until);
    EXPECT_EQ(fds, baseline_fds_) << "descriptors leaked";
    EXPECT_EQ(s.claims_live, 0u);
    EXPECT_EQ(s.ledger_bytes, 0u);
  }

  tempo::test::TempodFiles files_;
  pid_t daemon_ = -1;
  std::unique_ptr<Conn> bystander_;
  size_t baseline_fds_ = 0;
};

// Packets shorter than a header have no seq to answer: each closes its own connection, the
// empty one included, and a descriptor beside one is closed too (beside the empty packet,
// read as the client's hangup, it leaked); random bytes of a header or more are answered
// with an errno.
TEST_F(TempodHostileTest, GarbageIsRefusedAndClosesOnlyItsConnection) {
  std::mt19937_64 rng(15);
  const int memfd = make_memfd(4096, true);
  for (size_t len = 0; len < sizeof(tempod_hdr); ++len) {
    for (bool with_fd : {false, true}) {
      Conn c(files_.socket);
      std::vector<char> junk(len);
      for (char& b : junk) b = static_cast<char>(rng());
      ASSERT_TRUE(c.send(junk, with_fd ? std::vector<int>{memfd} : std::vector<int>{})) << len;
      EXPECT_TRUE(c.closed_by_daemon()) << len;
    }
  }
  close(memfd);
  for (bool after_hello : {false, true}) {
    Conn c(files_.socket);
    if (after_hello) {
      ASSERT_EQ(c.hello(), 0);
    }
    for (int i = 0; i < 200; ++i) {
      std::vector<char> junk(sizeof(tempod_hdr) + rng() % 200);
      for (char& b : junk) b = static_cast<char>(rng());
      const uint64_t seq = 1000 + i;
      std::memcpy(junk.data() + 8, &seq, sizeof(seq));  // to match the reply
      const int st = c.roundtrip(junk);
      EXPECT_LT(st, 0) << i;
      EXPECT_GE(st, -4095) << i;
    }
  }
  expect_nothing_left();
}

// Each message one byte short (its header's len saying so, or the packet's) is -EINVAL, as
// is a header whose len is not the packet's, and one byte too many.
TEST_F(TempodHostileTest, TruncatedAndOverlongMessagesAreEinval) {
  Conn c(files_.socket);
  tempod_hello hello{};
  hello.hdr = header(TEMPOD_OP_HELLO, sizeof(hello) - 1, 1);
  std::vector<char> m = bytes_of(hello);
  m.pop_back();
  EXPECT_EQ(c.roundtrip(m), -EINVAL);
  ASSERT_EQ(c.hello(), 0);
  const uint64_t id = c.report(1, 4096);
  const tempod_report report{header(TEMPOD_OP_REPORT, sizeof(tempod_report), 2), 1000, 1, 0};
  const tempod_order order{header(TEMPOD_OP_ORDER, sizeof(tempod_order), 3), 1, 0};
  const tempod_store_put put{header(TEMPOD_OP_STORE_PUT, sizeof(tempod_store_put), 4), 5, 64};
  const tempod_kmod_objects place{header(TEMPOD_OP_KMOD_ADD_OBJECTS, sizeof(place), 6), 0, 0};
  const tempod_layers layers{header(TEMPOD_OP_SET_LAYERS, sizeof(tempod_layers), 9), id, 0, 1, 0};
  std::vector<std::vector<char>> whole = {bytes_of(report),
                                          bytes_of(order),
                                          bytes_of(put),
                                          bytes_of(header(TEMPOD_OP_STATS, 24, 5)),
                                          bytes_of(header(TEMPOD_OP_TICK, 24, 6)),
                                          bytes_of(header(TEMPOD_OP_NOW, 24, 7)),
                                          bytes_of(header(TEMPOD_OP_TIMELINESS, 24, 8)),
                                          bytes_of(place),
                                          bytes_of(layers)};
  for (uint16_t op : {TEMPOD_OP_REVISE, TEMPOD_OP_RETRIEVAL, TEMPOD_OP_QUERY,
                      TEMPOD_OP_TRANSFER_BEGIN, TEMPOD_OP_TRANSFER_END, TEMPOD_OP_CANCEL,
                      TEMPOD_OP_WAIT_READY, TEMPOD_OP_EXTENTS, TEMPOD_OP_ORDINARY_READ})
    whole.push_back(bytes_of(claim_arg(op, 10 + op, id)));
  for (std::vector<char> msg : whole) {
    tempod_hdr h;
    std::memcpy(&h, msg.data(), sizeof(h));
    SCOPED_TRACE(h.op);
    // Headers that do not match the packet.
    for (uint32_t len : {uint32_t(msg.size() - 1), uint32_t(msg.size() + 1), 0u, ~0u}) {
      std::memcpy(msg.data() + 4, &len, sizeof(len));
      EXPECT_EQ(c.roundtrip(msg), -EINVAL) << len;
    }
    // A packet a byte short or long, its header saying so.
    if (msg.size() > sizeof(tempod_hdr)) {
      std::vector<char> shorter(msg.begin(), msg.end() - 1);
      const uint32_t len = uint32_t(shorter.size());
      std::memcpy(shorter.data() + 4, &len, sizeof(len));
      EXPECT_EQ(c.roundtrip(shorter), -EINVAL);
    }
    if (h.op != TEMPOD_OP_REPORT && h.op != TEMPOD_OP_ORDER) {  // these take a list
      std::vector<char> longer = msg;
      longer.push_back(0);
      const uint32_t len = uint32_t(longer.size());
      std::memcpy(longer.data() + 4, &len, sizeof(len));
      EXPECT_EQ(c.roundtrip(longer), -EINVAL);
    }
  }
  // A count the packet does not hold.
  tempod_report lying = report;
  lying.count = 4;
  lying.hdr.len = sizeof(lying) + sizeof(tempo_object);
  std::vector<char> lm = bytes_of(lying);
  lm.resize(sizeof(lying) + sizeof(tempo_object));
  EXPECT_EQ(c.roundtrip(lm), -EINVAL);
  // Placements are the kmod device's: well formed, this uring daemon has none to make.
  EXPECT_EQ(c.roundtrip(bytes_of(place)), -EOPNOTSUPP);
  tempod_kmod_objects lying_place = place;
  lying_place.count = 1;
  EXPECT_EQ(c.roundtrip(bytes_of(lying_place)), -EINVAL);
  c.close_now();
  expect_nothing_left();
}

// SET_LAYERS with each argument a hostile client can get wrong: its errno, and the claim
// stays as it was (still PLANNED, still whole, cancelled at the end by its owner's exit).
TEST_F(TempodHostileTest, SetLayersBadArgumentsGetTheirErrno) {
  Conn c(files_.socket);
  ASSERT_EQ(c.hello(), 0);
  const uint64_t id = c.report(1, 4096);  // one object: one group at most
  auto layers = [&](uint64_t claim, uint32_t groups, int64_t per_group_ns, uint32_t reserved) {
    const tempod_layers m{header(TEMPOD_OP_SET_LAYERS, sizeof(tempod_layers), 30), claim,
                          per_group_ns, groups, reserved};
    return c.roundtrip(bytes_of(m));
  };
  EXPECT_EQ(layers(id, 1, 0, 0), 0);
  EXPECT_EQ(layers(id, 1, 0, 1), -EINVAL);  // reserved
  EXPECT_EQ(layers(id, 0, 0, 0), -EINVAL);  // no group
  EXPECT_EQ(layers(id, 2, 0, 0), -EINVAL);  // more groups than objects
  EXPECT_EQ(layers(id, ~0u, 0, 0), -EINVAL);
  EXPECT_EQ(layers(id, 1, -1, 0), -EINVAL);  // needed before retrieval
  EXPECT_EQ(layers(id, 1, INT64_MIN, 0), -EINVAL);
  EXPECT_EQ(layers(id, 1, INT64_MAX, 0), -EOVERFLOW);  // beyond 2^62 ns
  EXPECT_EQ(layers(id + 1, 1, 0, 0), -ENOENT);         // unknown
  EXPECT_EQ(layers(TEMPO_NO_CLAIM, 1, 0, 0), -ENOENT);
  {
    Conn other(files_.socket);  // an engine of its own: not its claim
    ASSERT_EQ(other.hello(), 0);
    const tempod_layers m{header(TEMPOD_OP_SET_LAYERS, sizeof(tempod_layers), 31), id, 0, 1, 0};
    EXPECT_EQ(other.roundtrip(bytes_of(m)), -ENOENT);
  }
  EXPECT_EQ(c.roundtrip(bytes_of(claim_arg(TEMPOD_OP_CANCEL, 32, id))), 0);
  EXPECT_EQ(layers(id, 1, 0, 0), -EINVAL);  // ended
  c.close_now();
  expect_nothing_left();
}

// Versions other than TEMPOD_PROTO_VERSION (the one before it too) are -EPROTONOSUPPORT on
// every op; nonzero status or reserved -EINVAL.
TEST_F(TempodHostileTest, WrongVersionStatusOrReservedIsRefused) {
  Conn c(files_.socket);
  ASSERT_EQ(c.hello(), 0);
  for (int version : {0, TEMPOD_PROTO_VERSION - 1, TEMPOD_PROTO_VERSION + 1, 0xffff}) {
    tempod_hdr h = header(TEMPOD_OP_STATS, sizeof(tempod_hdr), 20);
    h.version = static_cast<uint16_t>(version);
    EXPECT_EQ(c.roundtrip(bytes_of(h)), -EPROTONOSUPPORT) << version;
  }
  tempod_hdr h = header(TEMPOD_OP_NOW, sizeof(tempod_hdr), 21);
  h.status = -1;
  EXPECT_EQ(c.roundtrip(bytes_of(h)), -EINVAL);
  h.status = 0;
  h.reserved = 1;
  EXPECT_EQ(c.roundtrip(bytes_of(h)), -EINVAL);
  EXPECT_EQ(c.roundtrip(bytes_of(header(TEMPOD_OP_NOW | TEMPOD_OP_REPLY, 24, 22))), -ENOTTY);
  c.close_now();
  expect_nothing_left();
}

// A packet longer than TEMPOD_MAX_MESSAGE closes its connection (it is not read in part);
// a REPORT of exactly the maximum is served.
TEST_F(TempodHostileTest, AnOversizedPacketClosesItsConnection) {
  {
    Conn c(files_.socket);
    ASSERT_EQ(c.hello(), 0);
    std::vector<char> big(TEMPOD_MAX_MESSAGE + 1);
    const tempod_hdr h = header(TEMPOD_OP_STATS, big.size(), 30);
    std::memcpy(big.data(), &h, sizeof(h));
    ASSERT_TRUE(c.send(big));
    EXPECT_TRUE(c.closed_by_daemon());
  }
  Conn c(files_.socket);
  ASSERT_EQ(c.hello(), 0);
  const uint32_t n = TEMPOD_MAX_OBJECTS;
  tempod_report r{header(TEMPOD_OP_REPORT, sizeof(tempod_report) + n * sizeof(tempo_object), 31),
                  3'600'000'000'000, n, 0};
  std::vector<char> msg = bytes_of(r);
  for (uint32_t i = 0; i < n; ++i) {
    const std::vector<char> o = bytes_of(tempo_object{100 + i, 4096});
    msg.insert(msg.end(), o.begin(), o.end());
  }
  ASSERT_GT(msg.size() + sizeof(tempo_object), TEMPOD_MAX_MESSAGE);  // no room for another
  EXPECT_EQ(c.roundtrip(msg), 0);
  c.close_now();  // its claim is cancelled with it
  expect_nothing_left();
}

// Descriptors beside requests that take none are closed; STORE_PUT without one is -EBADF,
// with one that is no file of the bytes -EINVAL; descriptors past the first, and more than
// a message may carry, are closed too.
TEST_F(TempodHostileTest, DescriptorsOfEveryKindAreClosed) {
  Conn c(files_.socket);
  ASSERT_EQ(c.hello(), 0);
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  const int dir = open(files_.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int efd = eventfd(0, EFD_CLOEXEC);
  const int small = make_memfd(16, true);
  const int unsealed = make_memfd(4096, false);
  const int good = make_memfd(4096, true);
  const std::vector<char> stats = bytes_of(header(TEMPOD_OP_STATS, 24, 40));
  EXPECT_EQ(c.roundtrip(stats, {pipe_fds[0]}), 0);
  EXPECT_EQ(c.roundtrip(stats, {pipe_fds[0], pipe_fds[1], dir, null}), 0);
  auto put = [&](uint64_t key, uint64_t bytes) {
    return bytes_of(tempod_store_put{
        header(TEMPOD_OP_STORE_PUT, sizeof(tempod_store_put), 50 + key), key, bytes});
  };
  EXPECT_EQ(c.roundtrip(put(1, 64)), -EBADF);
  EXPECT_EQ(c.roundtrip(put(2, 64), {pipe_fds[0]}), -EINVAL);
  EXPECT_EQ(c.roundtrip(put(3, 64), {null}), -EINVAL);
  EXPECT_EQ(c.roundtrip(put(4, 64), {efd}), -EINVAL);
  EXPECT_EQ(c.roundtrip(put(5, 64), {small}), -EINVAL);  // shorter than its bytes
  EXPECT_LT(c.roundtrip(put(6, 64), {dir}), 0);
  EXPECT_EQ(c.roundtrip(put(7, 0), {good}), -EINVAL);
  EXPECT_EQ(c.roundtrip(put(9, 64), {unsealed}), -EINVAL);      // it could shrink under the put
  EXPECT_EQ(c.roundtrip(put(8, 4096), {good, small, efd}), 0);  // the first one counts
  EXPECT_EQ(c.roundtrip(bytes_of(claim_arg(TEMPOD_OP_QUERY, 60, 12345)), {good}), -ENOENT);
  // More descriptors than a message may carry: the daemon reads none of them, and drops
  // the connection (the message was cut).
  std::vector<int> many(16, good);
  EXPECT_TRUE(c.send(stats, many));
  EXPECT_TRUE(c.closed_by_daemon());
  for (int fd : {pipe_fds[0], pipe_fds[1], dir, null, efd, small, unsealed, good}) close(fd);
  c.close_now();
  expect_nothing_left();
}

// Clients that go away with requests in flight (a wait, a put of a large object, staging,
// claims held) leave nothing behind.
TEST_F(TempodHostileTest, ClientsGoneMidRequestLeaveNothing) {
  for (int round = 0; round < 3; ++round) {
    Conn c(files_.socket);
    ASSERT_EQ(c.hello(TEMPOD_F_ALL), 0);
    const uint64_t waiting = c.report(200 + round, 4096);
    const uint64_t held = c.report(300 + round, 1 << 20);
    ASSERT_TRUE(c.send(bytes_of(claim_arg(TEMPOD_OP_WAIT_READY, 70, waiting, 3'600'000'000'000))));
    ASSERT_TRUE(c.send(bytes_of(claim_arg(TEMPOD_OP_RETRIEVAL, 71, held))));
    ASSERT_TRUE(c.send(bytes_of(claim_arg(TEMPOD_OP_ORDINARY_READ, 72, held))));
    const int big = make_memfd(32 << 20, true);
    ASSERT_TRUE(c.send(bytes_of(tempod_store_put{header(TEMPOD_OP_STORE_PUT, 40, 73),
                                                 uint64_t(400 + round), 32 << 20}),
                       {big}));
    close(big);
    ASSERT_TRUE(c.send(bytes_of(claim_arg(TEMPOD_OP_REVISE, 74, held, 1))));
    c.close_now();
    EXPECT_TRUE(daemon_alive());
    EXPECT_EQ(bystander_->roundtrip(bytes_of(header(TEMPOD_OP_NOW, 24, 75))), 0);
  }
  expect_nothing_left();
}

// Requests answered later (waits here; the store's operations alike) count against the
// client's queue as the replies it has not read do: a client that sends waits without end
// is no longer read once max_queued (256) are pending, instead of growing the daemon's
// list of waiters (and, for puts, the descriptors it holds) without bound. Others are
// served meanwhile; once the client goes, its waits go with it.
TEST_F(TempodHostileTest, PendingWaitsCountAgainstTheQueue) {
  Conn c(files_.socket);
  ASSERT_EQ(c.hello(), 0);
  const uint64_t id = c.report(1, 4096);
  constexpr int kWaits = 5000;
  int sent = 0;
  for (; sent < kWaits; ++sent) {
    // The daemon reads in bursts: a full socket is the end only when it stays full.
    if (!c.send_within(bytes_of(claim_arg(TEMPOD_OP_WAIT_READY, 100 + sent, id, 3'600'000'000'000)),
                       std::chrono::seconds(5)))
      break;
  }
  EXPECT_LT(sent, kWaits) << "the daemon kept reading a client with 256 waits pending";
  EXPECT_GT(sent, 256);
  EXPECT_EQ(bystander_->roundtrip(bytes_of(header(TEMPOD_OP_NOW, 24, 3))), 0);
  c.close_now();
  expect_nothing_left();
}

// A client may shrink the memfd of a STORE_PUT after sending it: the daemon maps it, and
// reading pages cut off under the mapping faults (SIGBUS) and killed it. Only a memfd
// sealed against shrinking is taken now: an unsealed one is -EINVAL at once, a sealed one
// cannot be cut (EPERM) and its put completes.
TEST_F(TempodHostileTest, AMemfdShrunkAfterItsPutIsSentDoesNotCrashTheDaemon) {
  Conn c(files_.socket);
  ASSERT_EQ(c.hello(), 0);
  constexpr uint64_t kBytes = 16 << 20;
  for (uint64_t key = 1; key <= 10; ++key) {
    const bool sealed = key % 2 == 0;
    const int fd = make_memfd(kBytes, sealed);
    ASSERT_TRUE(
        c.send(bytes_of(tempod_store_put{header(TEMPOD_OP_STORE_PUT, sizeof(tempod_store_put), key),
                                         key, kBytes}),
               {fd}));
    std::this_thread::sleep_for(std::chrono::microseconds(100 * key));
    EXPECT_EQ(ftruncate(fd, 0), sealed ? -1 : 0);
    close(fd);
    const std::vector<char> r = c.receive();
    ASSERT_EQ(r.size(), sizeof(tempod_hdr)) << "tempod died at put " << key;
    tempod_hdr h;
    std::memcpy(&h, r.data(), sizeof(h));
    EXPECT_EQ(h.status, sealed ? 0 : -EINVAL) << key;
  }
  EXPECT_TRUE(daemon_alive());
  c.close_now();
  expect_nothing_left();
}

// A put larger than daemon.max_put_bytes (1 GiB by default) is refused with -EFBIG before
// the daemon maps or writes anything (the memfd is sparse: it costs the test nothing): the
// key stays absent, the store's data file keeps its size, and the daemon serves on.
TEST_F(TempodHostileTest, AnOversizedPutIsRefusedAndNothingIsWritten) {
  Conn c(files_.socket);
  ASSERT_EQ(c.hello(), 0);
  // A put of `bytes` from a file of `file_bytes` (default: as many).
  const auto put = [&](uint64_t key, uint64_t bytes, uint64_t file_bytes = 0) {
    const int fd = make_memfd(file_bytes ? file_bytes : bytes, true);
    const int st =
        c.roundtrip(bytes_of(tempod_store_put{
                        header(TEMPOD_OP_STORE_PUT, sizeof(tempod_store_put), key), key, bytes}),
                    {fd});
    close(fd);
    return st;
  };
  const auto held = [&](uint64_t key) {
    tempod_keys k{header(TEMPOD_OP_STORE_LOOKUP, sizeof(tempod_keys) + 8, 30), 1, 0};
    std::vector<char> msg = bytes_of(k);
    const std::vector<char> tail = bytes_of(key);
    msg.insert(msg.end(), tail.begin(), tail.end());
    EXPECT_TRUE(c.send(msg));
    const std::vector<char> r = c.receive();
    tempod_reply_value v{};
    EXPECT_EQ(r.size(), sizeof(v));
    std::memcpy(&v, r.data(), std::min(r.size(), sizeof(v)));
    return v.value;
  };
  ASSERT_EQ(put(1, 4096), 0);
  const std::string data = files_.store + "/data";
  const auto size_before = fs::file_size(data);
  constexpr uint64_t kMax = uint64_t{1} << 30;
  EXPECT_EQ(put(2, kMax + 1), -EFBIG);
  EXPECT_EQ(put(2, ~uint64_t{0}, 4096), -EFBIG);
  EXPECT_EQ(held(2), 0);
  EXPECT_EQ(fs::file_size(data), size_before);
  EXPECT_EQ(put(2, 8192), 0);
  EXPECT_EQ(held(2), 1);
  c.close_now();
  expect_nothing_left();
}

}  // namespace

namespace {

// A careless operator's `tempod --socket ''` (it served the configuration's socket without a
// word; with --check-config it said "valid"): refused as bad usage, exit 2, with the reason.
TEST(TempodUsage, AnEmptySocketIsRefused) {
  const tempo::test::TempodFiles f = tempo::test::make_tempod_dir("tempod-usage");
  ASSERT_FALSE(f.dir.empty());
  const std::string cmd = std::string(TEMPOD_PATH) + " --config " + f.dir +
                          "/tempod.conf --socket '' --check-config 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[256];
  while (fgets(buf, sizeof(buf), p)) out += buf;
  const int status = pclose(p);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status << ": " << out;
  EXPECT_NE(out.find("--socket needs a path"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(f.socket)) << "it served " << f.socket;
  fs::remove_all(f.dir);
}

}  // namespace
