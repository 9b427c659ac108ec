// tempod with real processes: the daemon binary, clients through libtempo.so's client mode
// (the exported C ABI only), client processes killed with SIGKILL, a client that never reads.
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "../common/straddling_step.h"
#include "client/tempod_proto.h"
#include "tempo/tempo.h"
#include "tempo/tempo_sim.h"
#include "tempod_process.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kObjectBytes = 256 << 10;

class TempodTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const tempo::test::TempodFiles f = tempo::test::make_tempod_dir("tempod-test");
    ASSERT_FALSE(f.dir.empty());
    dir_ = f.dir;
    socket_ = f.socket;
    store_ = f.store;
  }
  // tempod's configuration, with `extra` lines among the top-level keys.
  void write_conf(const std::string& extra) const {
    tempo::test::write_tempod_conf({dir_, socket_, store_}, extra);
  }
  void TearDown() override {
    stop_daemon();
    fs::remove_all(dir_);
  }

  // Starts tempod and waits until it serves.
  void start_daemon() {
    daemon_ = tempo::test::spawn_tempod(TEMPOD_PATH, dir_);
    ASSERT_GT(daemon_, 0);
    const auto until = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < until) {
      tempo_ctx* c = nullptr;
      if (client(&c) == 0) {
        tempo_ctx_unref(c);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL() << "tempod did not start serving " << socket_;
  }
  void stop_daemon() { tempo::test::stop_tempod(&daemon_); }

  int client(tempo_ctx** out, const char* engine = nullptr) const {
    tempo_config* cfg = nullptr;
    tempo_config_new(&cfg);
    tempo_config_set(cfg, "device", "daemon");
    tempo_config_set(cfg, "daemon.socket", socket_.c_str());
    if (engine) tempo_config_set(cfg, "daemon.engine", engine);
    const int r = tempo_ctx_new(cfg, out);
    tempo_config_free(cfg);
    return r;
  }
  // Starts tempod with `conf` among its top-level keys, then two engines' clients.
  void start_two_engines(const std::string& conf, const char* name_a, tempo_ctx** a,
                         const char* name_b, tempo_ctx** b) {
    write_conf(conf);
    start_daemon();
    ASSERT_EQ(client(a, name_a), 0);
    ASSERT_EQ(client(b, name_b), 0);
  }
  tempo_ctx* must_client() const {
    tempo_ctx* c = nullptr;
    EXPECT_EQ(client(&c), 0);
    return c;
  }
  // The store opened in this process (no daemon): 0 or the error, message in *error.
  int in_process(tempo_ctx** out, std::string* error) const {
    tempo_config* cfg = nullptr;
    tempo_config_new(&cfg);
    tempo_config_set(cfg, "device", "uring");
    tempo_config_set(cfg, "fast_tier_bytes", "64MiB");
    tempo_config_set(cfg, "budget_bytes", "8MiB");
    tempo_config_set(cfg, "uring.store_path", store_.c_str());
    tempo_config_set(cfg, "uring.huge_pages", "false");
    tempo_config_set(cfg, "uring.prefault", "false");
    const int r = tempo_ctx_new(cfg, out);
    *error = tempo_config_error(cfg);
    tempo_config_free(cfg);
    return r;
  }

  // A bare protocol connection after its HELLO, or -1.
  int raw_hello() const {
    const int s = raw_connect();
    tempod_hello hello{};
    hello.hdr = {TEMPOD_OP_HELLO, TEMPOD_PROTO_VERSION, sizeof(hello), 1, 0, 0};
    tempod_hello_reply r{};
    if (s < 0 || send(s, &hello, sizeof(hello), 0) != ssize_t(sizeof(hello)) ||
        recv(s, &r, sizeof(r), 0) != ssize_t(sizeof(r)) || r.hdr.status != 0) {
      if (s >= 0) close(s);
      return -1;
    }
    return s;
  }
  // Sends one request, returns its reply's bytes.
  static std::vector<std::byte> roundtrip(int s, const void* msg, size_t len) {
    EXPECT_EQ(send(s, msg, len, 0), ssize_t(len));
    std::vector<std::byte> r(TEMPOD_MAX_MESSAGE);
    const ssize_t n = recv(s, r.data(), r.size(), 0);
    EXPECT_GE(n, ssize_t(sizeof(tempod_hdr)));
    r.resize(n > 0 ? size_t(n) : 0);
    return r;
  }
  static int status_of(const std::vector<std::byte>& r) {
    tempod_hdr h{};
    std::memcpy(&h, r.data(), std::min(r.size(), sizeof(h)));
    return h.status;
  }
  // Claims of `ids` whose state holds protected capacity (committed, not ended).
  static size_t committed(tempo_ctx* c, const std::vector<tempo_claim_id>& ids) {
    size_t n = 0;
    for (tempo_claim_id id : ids) {
      tempo_claim_info info{};
      if (tempo_claim_query(c, id, &info, sizeof info) == 0 &&
          (info.state == TEMPO_CLAIM_STAGING || info.state == TEMPO_CLAIM_STAGE_READY ||
           info.state == TEMPO_CLAIM_TRANSFERRING))
        ++n;
    }
    return n;
  }
  // Runs a tempoctl command line; its stdout, and its exit code in *code.
  static std::string tempoctl(const std::string& args, int* code) {
    FILE* p = popen((std::string(TEMPOCTL_PATH) + " " + args).c_str(), "r");
    std::string out;
    if (p == nullptr) return out;
    char buf[4096];
    for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
    const int status = pclose(p);
    *code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return out;
  }

  // Three claims reported, the last one cancelled: reported 3, cancelled 1, live 2.
  static void report_three_cancel_one(tempo_ctx* c) {
    const tempo_object objs[] = {{51, kObjectBytes}};
    tempo_claim_id id = 0;
    for (int i = 0; i < 3; ++i)
      ASSERT_EQ(tempo_claim_report(c, objs, 1, 3'600'000'000'000, &id), 0);
    ASSERT_EQ(tempo_claim_cancel(c, id), 0);
  }

  // Starts tempod with its metrics listener on a free loopback port (one the kernel just
  // gave a probe socket); the port.
  uint16_t start_with_metrics() {
    const int probe = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    EXPECT_EQ(bind(probe, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    EXPECT_EQ(getsockname(probe, reinterpret_cast<sockaddr*>(&a), &len), 0);
    close(probe);
    const uint16_t port = ntohs(a.sin_port);
    write_conf("daemon.metrics_listen = 127.0.0.1:" + std::to_string(port) + "\n");
    start_daemon();
    return port;
  }
  // A TCP connection to the metrics listener, or -1.
  static int metrics_connect(uint16_t port) {
    const int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) return s;
    close(s);
    return -1;
  }
  // Sends `request` (if any) and reads until the daemon closes the connection (bounded by
  // 20 s of silence): what it answered; "(open)" if it never closed.
  static std::string metrics_exchange(int s, const std::string& request) {
    if (!request.empty()) {
      EXPECT_EQ(send(s, request.data(), request.size(), MSG_NOSIGNAL), ssize_t(request.size()));
    }
    std::string out;
    char buf[4096];
    while (true) {
      pollfd p{s, POLLIN, 0};
      if (poll(&p, 1, 20000) != 1) return "(open)";
      const ssize_t n = recv(s, buf, sizeof(buf), 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    close(s);
    return out;
  }

  // A bare protocol connection (no HELLO sent yet), or -1.
  int raw_connect() const {
    const int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, socket_.c_str());
    if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return s;
    close(s);
    return -1;
  }

  static std::vector<char> object_bytes(uint64_t key) {
    std::vector<char> v(kObjectBytes);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<char>((key * 131 + i * 7) & 0xff);
    return v;
  }
  static void put(tempo_ctx* c, uint64_t key) {
    const auto v = object_bytes(key);
    ASSERT_EQ(tempo_store_put(c, key, v.data(), v.size()), 0) << key;
  }
  // Waits until no protected byte, pin or live claim is left (staging of cancelled claims
  // ends first).
  static tempo_counters settle(tempo_ctx* c) {
    tempo_counters s{};
    const auto until = Clock::now() + std::chrono::seconds(10);
    do {
      EXPECT_EQ(tempo_ctx_stats(c, &s, sizeof s), 0);
      if (s.ledger_bytes == 0 && s.pinned_bytes == 0 && s.claims_live == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } while (Clock::now() < until);
    return s;
  }

  std::string dir_, socket_, store_;
  pid_t daemon_ = -1;
};

TEST_F(TempodTest, SameCallsAndReturnCodesAsInProcess) {
  start_daemon();
  tempo_ctx* c = must_client();
  ASSERT_NE(c, nullptr);
  EXPECT_STREQ(tempo_ctx_device(c), "uring");
  tempo_claim_id id = 0;
  const tempo_object objs[] = {{1, kObjectBytes}, {2, kObjectBytes}};
  EXPECT_EQ(tempo_claim_report(c, objs, 0, 1000000, &id), -EINVAL);
  const tempo_object zero[] = {{1, 0}};
  EXPECT_EQ(tempo_claim_report(c, zero, 1, 1000000, &id), -EINVAL);
  ASSERT_EQ(tempo_claim_report(c, objs, 2, 10'000'000'000, &id), 0);
  EXPECT_EQ(tempo_claim_revise(c, id, 5'000'000'000), 0);
  EXPECT_EQ(tempo_claim_revise(c, id + 1000, 1), -ENOENT);
  tempo_claim_info info{};
  ASSERT_EQ(tempo_claim_query(c, id, &info, sizeof info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_PLANNED);
  EXPECT_EQ(info.bytes, 2 * kObjectBytes);
  EXPECT_EQ(tempo_claim_transfer_end(c, id), -EINVAL);
  EXPECT_EQ(tempo_claim_transfer_begin(c, id), -EINVAL);
  const tempo_claim_id order[] = {TEMPO_NO_CLAIM, id};
  EXPECT_EQ(tempo_order_update(c, order, 2), 0);
  EXPECT_EQ(tempo_sim_advance(c, 1), -EOPNOTSUPP);

  // Claims belong to their engine, and an unnamed client is an engine of its own: another
  // client cannot see or touch this one.
  tempo_ctx* other = must_client();
  EXPECT_EQ(tempo_claim_query(other, id, &info, sizeof info), -ENOENT);
  EXPECT_EQ(tempo_claim_cancel(other, id), -ENOENT);
  EXPECT_EQ(tempo_order_update(other, &id, 1), -ENOENT);

  EXPECT_EQ(tempo_claim_cancel(c, id), 0);
  EXPECT_EQ(tempo_claim_cancel(c, id), -EINVAL);  // ended: as in-process
  EXPECT_EQ(tempo_ctx_tick(c), 0);
  EXPECT_GT(tempo_ctx_now(c), 0);
  tempo_ctx_unref(other);
  tempo_ctx_unref(c);
}

TEST_F(TempodTest, RetrievedExtentsAreReadInPlaceFromTheSharedFastTier) {
  start_daemon();
  tempo_ctx* c = must_client();
  ASSERT_NE(c, nullptr);
  put(c, 11);
  put(c, 12);
  EXPECT_EQ(tempo_store_put(c, 11, "x", 1), -EEXIST);
  const tempo_object objs[] = {{11, kObjectBytes}, {12, kObjectBytes}};
  tempo_claim_id id = 0;
  ASSERT_EQ(tempo_claim_report(c, objs, 2, 0, &id), 0);
  int outcome = -1;
  ASSERT_EQ(tempo_claim_request_retrieval(c, id, &outcome), 0);
  ASSERT_EQ(tempo_claim_wait_ready(c, id, 5'000'000'000, &outcome), 0);
  ASSERT_EQ(outcome, TEMPO_RETRIEVAL_READY);
  ASSERT_EQ(tempo_claim_transfer_begin(c, id), 0);
  size_t count = 0;
  EXPECT_EQ(tempo_claim_extents(c, id, nullptr, 0, &count), -ENOSPC);
  ASSERT_EQ(count, 2u);
  tempo_extent ext[2];
  ASSERT_EQ(tempo_claim_extents(c, id, ext, 2, &count), 0);
  for (size_t i = 0; i < 2; ++i) {
    const auto want = object_bytes(11 + i);
    ASSERT_EQ(ext[i].bytes, kObjectBytes);
    EXPECT_EQ(std::memcmp(ext[i].addr, want.data(), want.size()), 0) << "object " << 11 + i;
  }
  tempo_counters s{};
  ASSERT_EQ(tempo_ctx_stats(c, &s, sizeof s), 0);
  EXPECT_EQ(s.ledger_bytes, 2 * kObjectBytes);
  ASSERT_EQ(tempo_claim_transfer_end(c, id), 0);
  EXPECT_EQ(tempo_claim_transfer_end(c, id), -EINVAL);
  s = settle(c);
  EXPECT_EQ(s.ledger_bytes, 0u);
  EXPECT_EQ(s.pinned_bytes, 0u);
  tempo_ctx_unref(c);
}

TEST_F(TempodTest, WaitReadyAnswersAtItsDeadline) {
  start_daemon();
  tempo_ctx* c = must_client();
  ASSERT_NE(c, nullptr);
  const tempo_object objs[] = {{21, kObjectBytes}};
  tempo_claim_id id = 0;
  ASSERT_EQ(tempo_claim_report(c, objs, 1, 3'600'000'000'000, &id), 0);
  int outcome = -1;
  const auto t0 = Clock::now();
  EXPECT_EQ(tempo_claim_wait_ready(c, id, 100'000'000, &outcome), -ETIMEDOUT);
  EXPECT_GE(Clock::now() - t0, std::chrono::milliseconds(100));
  tempo_ctx_unref(c);
}

// A client that is SIGKILLed loses its claims; its protected bytes and pins return.
TEST_F(TempodTest, KilledClientsLeaveNothingBehind) {
  start_daemon();
  tempo_ctx* setup = must_client();
  ASSERT_NE(setup, nullptr);
  for (uint64_t k = 1; k <= 16; ++k) put(setup, 100 + k);
  const char* env = std::getenv("TEMPOD_HAMMER_SECONDS");
  const int seconds = env ? std::atoi(env) : 5;
  auto hammer = [&](unsigned seed) {
    tempo_ctx* c = nullptr;
    if (client(&c) != 0) _exit(1);
    std::mt19937_64 rng(seed);
    std::vector<tempo_claim_id> live;
    while (true) {
      const uint64_t first = 101 + rng() % 15;
      const tempo_object objs[] = {{first, kObjectBytes}, {first + 1, kObjectBytes}};
      tempo_claim_id id = 0;
      if (tempo_claim_report(c, objs, 2, static_cast<int64_t>(rng() % 20'000'000), &id) != 0)
        _exit(2);
      live.push_back(id);
      const tempo_claim_id pick = live[rng() % live.size()];
      int outcome = 0;
      switch (rng() % 4) {
        case 0:
          tempo_claim_revise(c, pick, static_cast<int64_t>(rng() % 10'000'000));
          break;
        case 1:
          tempo_claim_cancel(c, pick);
          break;
        case 2:
          if (tempo_claim_request_retrieval(c, pick, &outcome) == 0 &&
              tempo_claim_wait_ready(c, pick, 50'000'000, &outcome) == 0 &&
              outcome == TEMPO_RETRIEVAL_READY && tempo_claim_transfer_begin(c, pick) == 0 &&
              rng() % 2 == 0)
            tempo_claim_transfer_end(c, pick);
          break;
        default:
          tempo_order_update(c, live.data(), std::min<size_t>(live.size(), 8));
      }
      if (live.size() > 64) live.erase(live.begin(), live.begin() + 32);
    }
  };
  std::vector<pid_t> kids(8);
  unsigned seed = 1;
  auto spawn = [&](size_t i) {
    kids[i] = fork();
    if (kids[i] == 0) hammer(seed);
    ++seed;
  };
  for (size_t i = 0; i < kids.size(); ++i) spawn(i);
  std::mt19937 rng(7);
  int killed = 0;
  const auto until = Clock::now() + std::chrono::seconds(seconds);
  while (Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const size_t i = rng() % kids.size();
    kill(kids[i], SIGKILL);
    int status = 0;
    waitpid(kids[i], &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "client " << i << " exited with " << status;
    ++killed;
    spawn(i);
  }
  for (pid_t k : kids) {
    kill(k, SIGKILL);
    int status = 0;
    waitpid(k, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status)) << "a client failed: " << status;
  }
  EXPECT_GE(killed, seconds);  // one every 100 ms when idle; forks are slow under TSan and load
  const tempo_counters s = settle(setup);
  EXPECT_EQ(s.ledger_bytes, 0u);
  EXPECT_EQ(s.reserved_bytes, 0u);
  EXPECT_EQ(s.pinned_bytes, 0u);
  EXPECT_EQ(s.claims_live, 0u);
  // The clients worked: about 2,000 reports in 5 s normally, 150 under TSan at load 25.
  EXPECT_GT(s.claims_reported, 50u);
  // Still serving.
  tempo_ctx* after = must_client();
  const tempo_object objs[] = {{101, kObjectBytes}};
  tempo_claim_id id = 0;
  EXPECT_EQ(tempo_claim_report(after, objs, 1, 1000, &id), 0);
  tempo_ctx_unref(after);
  tempo_ctx_unref(setup);
}

TEST_F(TempodTest, DaemonRestartGivesAClearErrorThenClientsReconnect) {
  start_daemon();
  tempo_ctx* c = must_client();
  ASSERT_NE(c, nullptr);
  const tempo_object objs[] = {{31, kObjectBytes}};
  tempo_claim_id id = 0;
  ASSERT_EQ(tempo_claim_report(c, objs, 1, 1'000'000'000, &id), 0);
  stop_daemon();
  tempo_counters s{};
  EXPECT_EQ(tempo_ctx_stats(c, &s, sizeof s), -ECONNRESET);
  EXPECT_EQ(tempo_ctx_stats(c, &s, sizeof s), -ENOENT);  // the socket is gone with the daemon
  start_daemon();
  EXPECT_EQ(tempo_ctx_stats(c, &s, sizeof s), 0);
  EXPECT_EQ(s.claims_live, 0u);
  tempo_claim_info info{};
  EXPECT_EQ(tempo_claim_query(c, id, &info, sizeof info), -ENOENT);
  EXPECT_EQ(tempo_claim_report(c, objs, 1, 1'000'000'000, &id), 0);
  tempo_ctx_unref(c);
}

TEST_F(TempodTest, SecondOpenerOfTheStoreGetsEbusyNamingTheHolder) {
  start_daemon();
  tempo_ctx* in = nullptr;
  std::string error;
  EXPECT_EQ(in_process(&in, &error), -EBUSY);
  EXPECT_NE(error.find("locked by pid " + std::to_string(daemon_)), std::string::npos) << error;
  stop_daemon();
  // Once the daemon is gone, the store is the in-process context's; a second one is refused.
  ASSERT_EQ(in_process(&in, &error), 0) << error;
  tempo_ctx* second = nullptr;
  EXPECT_EQ(in_process(&second, &error), -EBUSY);
  EXPECT_NE(error.find("locked by pid " + std::to_string(getpid())), std::string::npos) << error;
  tempo_ctx_unref(in);
}

// Two writer processes put 200 objects each through one daemon: all 400 are kept.
TEST_F(TempodTest, TwoWritersKeepAllTheirObjects) {
  start_daemon();
  pid_t writers[2];
  for (int w = 0; w < 2; ++w) {
    writers[w] = fork();
    if (writers[w] == 0) {
      tempo_ctx* c = nullptr;
      if (client(&c) != 0) _exit(1);
      std::vector<char> data(4096, static_cast<char>(w));
      for (uint64_t k = 0; k < 200; ++k)
        if (tempo_store_put(c, 1000 + uint64_t(w) * 200 + k, data.data(), data.size()) != 0)
          _exit(2);
      _exit(0);
    }
  }
  for (pid_t w : writers) {
    int status = 0;
    waitpid(w, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  stop_daemon();
  tempo_ctx* in = nullptr;
  std::string error;
  ASSERT_EQ(in_process(&in, &error), 0) << error;
  int kept = 0;
  for (uint64_t k = 1000; k < 1400; ++k) kept += tempo_store_put(in, k, "x", 1) == -EEXIST;
  EXPECT_EQ(kept, 400);
  tempo_ctx_unref(in);
}

// A client that sends requests and never reads a reply stalls nobody else.
TEST_F(TempodTest, AClientThatNeverReadsDoesNotStallOthers) {
  start_daemon();
  tempo_ctx* c = must_client();
  ASSERT_NE(c, nullptr);
  const tempo_object objs[] = {{41, kObjectBytes}};
  auto pairs = [&] {  // 1,000 report + cancel round trips: how long they took
    const auto t0 = Clock::now();
    for (int i = 0; i < 1000; ++i) {
      tempo_claim_id id = 0;
      if (tempo_claim_report(c, objs, 1, 1'000'000'000, &id) != 0 || tempo_claim_cancel(c, id))
        ADD_FAILURE() << "round trip " << i;
    }
    return Clock::now() - t0;
  };
  const auto alone = pairs();

  const int s = raw_connect();
  ASSERT_GE(s, 0);
  tempod_hello hello{};
  hello.hdr = {TEMPOD_OP_HELLO, TEMPOD_PROTO_VERSION, sizeof(hello), 1, 0, 0};
  ASSERT_EQ(send(s, &hello, sizeof(hello), 0), ssize_t(sizeof(hello)));
  tempod_hdr stats{TEMPOD_OP_STATS, TEMPOD_PROTO_VERSION, sizeof(tempod_hdr), 2, 0, 0};
  int sent = 0;
  while (send(s, &stats, sizeof(stats), MSG_DONTWAIT) == ssize_t(sizeof(stats))) ++sent;
  EXPECT_EQ(errno, EAGAIN);  // the daemon stopped reading it: its queue is full
  EXPECT_GT(sent, 256);
  // Beside the client that never reads, the same work is not held up: a stall would block
  // these calls (the test's timeout), a daemon busy with the stalled client would slow them
  // far beyond the spread of a loaded machine.
  const auto beside = pairs();
  EXPECT_LT(beside, 10 * alone + std::chrono::seconds(2));
  close(s);
  tempo_ctx_unref(c);
}

// tempoctl metrics: the daemon's counters as Prometheus text, exact values.
TEST_F(TempodTest, TempoctlMetricsPrintsPrometheusText) {
  start_daemon();
  tempo_ctx* c = must_client();
  ASSERT_NE(c, nullptr);
  report_three_cancel_one(c);
  const std::string cmd = std::string(TEMPOCTL_PATH) + " metrics --daemon " + socket_;
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0);
  for (const char* want :
       {"# TYPE tempo_claims_reported_total counter\n", "\ntempo_claims_reported_total 3\n",
        "\ntempo_claims_cancelled_total 1\n", "\ntempo_claims_live 2\n",
        "\ntempo_budget_bytes 8388608\n", "# TYPE tempo_protected_bytes gauge\n"})
    EXPECT_NE(out.find(want), std::string::npos) << want << " not in:\n" << out;
  tempo_ctx_unref(c);
  const std::string bad =
      std::string(TEMPOCTL_PATH) + " metrics --daemon " + dir_ + "/none 2>/dev/null";
  EXPECT_EQ(WEXITSTATUS(std::system(bad.c_str())), 1);
}

// tempoctl stats --daemon: the daemon's counters and timeliness as JSON by default (the keys
// of the control socket's stats), as text with --human; a socket nobody serves exits 1.
TEST_F(TempodTest, TempoctlStatsDaemonPrintsItsCountersAsJson) {
  start_daemon();
  tempo_ctx* c = must_client();
  ASSERT_NE(c, nullptr);
  report_three_cancel_one(c);
  int code = -1;
  const std::string json = tempoctl("stats --daemon " + socket_, &code);
  EXPECT_EQ(code, 0);
  for (const char* want :
       {"\"device\": \"uring\"", "\"claims_reported\": 3,", "\"claims_cancelled\": 1,",
        "\"claims_live\": 2,", "\"budget_bytes\": 8388608,", "\"retrievals_on_time\": 0,",
        "\"commit_margin_buckets\": ["})
    EXPECT_NE(json.find(want), std::string::npos) << want << " not in:\n" << json;
  const std::string text = tempoctl("stats -D " + socket_ + " --human", &code);
  EXPECT_EQ(code, 0);
  EXPECT_NE(text.find("\nclaims_reported            3\n"), std::string::npos) << text;
  EXPECT_EQ(text.find('{'), std::string::npos) << text;
  tempo_ctx_unref(c);
  tempoctl("stats --daemon " + dir_ + "/none 2>/dev/null", &code);
  EXPECT_EQ(code, 1);
}

// One engine, several processes (a scheduler and its workers): the connections that give
// one engine name share its claims; the claims live until the engine's last connection
// closes, and a transfer begun by a connection that goes away is ended.
TEST_F(TempodTest, ConnectionsOfOneEngineShareItsClaims) {
  start_daemon();
  tempo_ctx* sched = nullptr;
  tempo_ctx* other = nullptr;
  ASSERT_EQ(client(&sched, "vllm-0"), 0);
  ASSERT_EQ(client(&other, "vllm-1"), 0);
  put(sched, 61);
  put(sched, 62);
  const tempo_object objs[] = {{61, kObjectBytes}, {62, kObjectBytes}};
  tempo_claim_id id = 0;
  tempo_claim_id keep = 0;
  ASSERT_EQ(tempo_claim_report(sched, objs, 2, 3'600'000'000'000, &id), 0);
  ASSERT_EQ(tempo_claim_report(sched, objs, 1, 3'600'000'000'000, &keep), 0);
  tempo_claim_info info{};
  EXPECT_EQ(tempo_claim_query(other, id, &info, sizeof info), -ENOENT);
  EXPECT_EQ(tempo_claim_cancel(other, id), -ENOENT);
  int outcome = -1;
  ASSERT_EQ(tempo_claim_request_retrieval(sched, id, &outcome), 0);
  // The worker: another process of the engine, which waits for the scheduler's claim,
  // transfers it, reads it in place, says how that went, and is killed mid-transfer.
  int done[2];
  ASSERT_EQ(pipe(done), 0);
  const pid_t worker = fork();
  ASSERT_GE(worker, 0);
  if (worker == 0) {
    tempo_ctx* w = nullptr;
    tempo_extent ext[4];
    size_t n = 0;
    const auto want = object_bytes(62);
    const char ok = client(&w, "vllm-0") == 0 &&
                    tempo_claim_query(w, id, &info, sizeof info) == 0 &&
                    tempo_order_update(w, &id, 1) == 0 &&
                    tempo_claim_wait_ready(w, id, 10'000'000'000, &outcome) == 0 &&
                    outcome == TEMPO_RETRIEVAL_READY && tempo_claim_transfer_begin(w, id) == 0 &&
                    tempo_claim_extents(w, id, ext, 4, &n) == 0 && n == 2 &&
                    std::memcmp(ext[1].addr, want.data(), want.size()) == 0;
    if (write(done[1], &ok, 1) != 1) _exit(1);
    pause();
    _exit(0);
  }
  char ok = 0;
  ASSERT_EQ(read(done[0], &ok, 1), 1);
  EXPECT_EQ(ok, 1);
  close(done[0]);
  close(done[1]);
  ASSERT_EQ(tempo_claim_query(sched, id, &info, sizeof info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_TRANSFERRING);
  // kill -9 mid-transfer: its transfer ends, the engine's other claim lives on.
  kill(worker, SIGKILL);
  waitpid(worker, nullptr, 0);
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (tempo_claim_query(sched, id, &info, sizeof info) == 0 &&
         info.state != TEMPO_CLAIM_RELEASED && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(info.state, TEMPO_CLAIM_RELEASED);
  ASSERT_EQ(tempo_claim_query(sched, keep, &info, sizeof info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_PLANNED);
  // The engine's last connection goes: its claims are cancelled.
  tempo_ctx_unref(sched);
  tempo_ctx* watch = must_client();
  const tempo_counters s = settle(watch);
  EXPECT_EQ(s.claims_live, 0u);
  EXPECT_EQ(s.claims_cancelled, 1u);
  EXPECT_EQ(s.ledger_bytes, 0u);
  tempo_ctx_unref(watch);
  tempo_ctx_unref(other);
}

// ABI 0.3 through the daemon: store lookup and delete, the fast tier's mapping, the
// asynchronous writer and the runtime side's per-step call (its revisions in one batch).
TEST_F(TempodTest, EngineCallsOfAbi03GoThroughTheDaemon) {
  start_daemon();
  tempo_ctx* c = must_client();
  ASSERT_NE(c, nullptr);
  for (uint64_t k : {71, 72, 73}) put(c, k);
  const uint64_t keys[] = {71, 72, 73, 74};
  size_t prefix = 99;
  EXPECT_EQ(tempo_store_lookup(c, keys, 4, &prefix), 0);
  EXPECT_EQ(prefix, 3u);
  EXPECT_EQ(tempo_store_lookup(c, keys, 0, &prefix), 0);
  EXPECT_EQ(prefix, 0u);
  EXPECT_EQ(tempo_store_lookup(c, nullptr, 2, &prefix), -EINVAL);
  EXPECT_EQ(tempo_store_delete(c, 72), 0);
  EXPECT_EQ(tempo_store_delete(c, 72), -ENOENT);
  EXPECT_EQ(tempo_store_lookup(c, keys, 4, &prefix), 0);
  EXPECT_EQ(prefix, 1u);

  void* base = nullptr;
  uint64_t bytes = 0;
  ASSERT_EQ(tempo_ctx_fast_tier(c, &base, &bytes), 0);
  EXPECT_EQ(bytes, 64u << 20);
  const tempo_object objs[] = {{73, kObjectBytes}};
  tempo_claim_id id = 0;
  int outcome = 0;
  ASSERT_EQ(tempo_claim_report(c, objs, 1, 0, &id), 0);
  ASSERT_EQ(tempo_claim_request_retrieval(c, id, &outcome), 0);
  ASSERT_EQ(tempo_claim_wait_ready(c, id, 10'000'000'000, &outcome), 0);
  ASSERT_EQ(tempo_claim_transfer_begin(c, id), 0);
  tempo_extent ext[1];
  size_t n = 0;
  ASSERT_EQ(tempo_claim_extents(c, id, ext, 1, &n), 0);
  const auto* at = static_cast<const std::byte*>(ext[0].addr);
  EXPECT_TRUE(at >= static_cast<std::byte*>(base) &&
              at + ext[0].bytes <= static_cast<std::byte*>(base) + bytes);
  EXPECT_EQ(tempo_claim_transfer_end(c, id), 0);

  tempo_writer* w = nullptr;
  ASSERT_EQ(tempo_writer_new(c, 2, &w), 0);
  const auto a = object_bytes(81);
  const auto b = object_bytes(82);
  ASSERT_EQ(tempo_writer_put(w, 81, a.data(), a.size(), 1), 0);
  ASSERT_EQ(tempo_writer_put(w, 82, b.data(), b.size(), 2), 0);
  ASSERT_EQ(tempo_writer_wait(w, 30'000'000'000), 0);
  tempo_put_completion done[4];
  ASSERT_EQ(tempo_writer_completions(w, done, 4, &n), 0);
  ASSERT_EQ(n, 2u);
  EXPECT_EQ(done[0].status, 0);
  EXPECT_EQ(done[1].status, 0);
  tempo_writer_free(w);
  const uint64_t written[] = {81, 82};
  EXPECT_EQ(tempo_store_lookup(c, written, 2, &prefix), 0);
  EXPECT_EQ(prefix, 2u);

  // The runtime side: two waiting requests with claims get TTUs from the step.
  tempo_runtime_config rc{};
  rc.max_active = 4;
  rc.generation_limit = 256;
  rc.costs = {1e6, 1e4, 0, 2e7, 1e5, 0, 1e9, {0, 0}};
  tempo_runtime* rt = nullptr;
  ASSERT_EQ(tempo_runtime_new(c, &rc, &rt), 0);
  tempo_claim_id w1 = 0;
  tempo_claim_id w2 = 0;
  const tempo_object o81[] = {{81, kObjectBytes}};
  ASSERT_EQ(tempo_claim_report(c, o81, 1, 3'600'000'000'000, &w1), 0);
  ASSERT_EQ(tempo_claim_report(c, o81, 1, 3'600'000'000'000, &w2), 0);
  tempo_running_seq running[1] = {};
  running[0].prompt_tokens = 1000;
  running[0].computed_tokens = 1000;
  running[0].tokens_generated = 10;
  tempo_waiting_seq waiting[2] = {};
  waiting[0].prompt_tokens = waiting[1].prompt_tokens = 2000;
  waiting[0].claim = w1;
  waiting[1].claim = w2;
  tempo_step step{};
  step.running = running;
  step.running_count = 1;
  step.waiting = waiting;
  step.waiting_count = 2;
  ASSERT_EQ(tempo_runtime_step(rt, &step), 0);
  tempo_claim_info i1{};
  tempo_claim_info i2{};
  ASSERT_EQ(tempo_claim_query(c, w1, &i1, sizeof i1), 0);
  ASSERT_EQ(tempo_claim_query(c, w2, &i2, sizeof i2), 0);
  EXPECT_LT(i1.ttu_ns, 3'000'000'000'000);  // revised from an hour
  EXPECT_LE(i1.ttu_ns, i2.ttu_ns);          // the second is not served before the first
  waiting[1].claim = 987654321;             // unknown: the order update refuses it
  EXPECT_EQ(tempo_runtime_step(rt, &step), -ENOENT);
  tempo_runtime_free(rt);
  tempo_ctx_unref(c);
}

// BATCH: entries run in order, each answered as its single request would be; a malformed
// entry fails the whole message and none of it runs.
TEST_F(TempodTest, BatchRunsEntriesInOrderAndRefusesMalformedOnes) {
  start_daemon();
  tempo_ctx* setup = must_client();
  put(setup, 91);
  tempo_ctx_unref(setup);
  const int s = raw_hello();
  ASSERT_GE(s, 0);
  struct Msg {
    std::vector<std::byte> bytes = std::vector<std::byte>(sizeof(tempod_batch));
    uint32_t count = 0;
    void add(uint16_t op, uint64_t id, int64_t arg, uint32_t objects = 0) {
      const tempod_batch_entry e{op, 0, objects, id, arg};
      const size_t at = bytes.size();
      bytes.resize(at + sizeof(e) + objects * sizeof(tempo_object));
      std::memcpy(bytes.data() + at, &e, sizeof(e));
      for (uint32_t i = 0; i < objects; ++i) {
        const tempo_object o{91, kObjectBytes};
        std::memcpy(bytes.data() + at + sizeof(e) + i * sizeof(o), &o, sizeof(o));
      }
      ++count;
    }
    void add_spread(uint64_t id, int64_t ttu, const tempod_ttu_spread& q, size_t size = sizeof q) {
      add(TEMPOD_OP_REVISE_SPREAD, id, ttu);
      const size_t at = bytes.size();
      bytes.resize(at + size);
      std::memcpy(bytes.data() + at, &q, size);
    }
    const std::byte* seal(uint64_t seq) {
      tempod_batch b{};
      b.hdr = {TEMPOD_OP_BATCH, TEMPOD_PROTO_VERSION, uint32_t(bytes.size()), seq, 0, 0};
      b.count = count;
      std::memcpy(bytes.data(), &b, sizeof(b));
      return bytes.data();
    }
  };
  auto results = [](const std::vector<std::byte>& r) {
    std::vector<tempod_batch_result> out;
    tempod_reply_value v{};
    if (r.size() < sizeof(v)) return out;
    std::memcpy(&v, r.data(), sizeof(v));
    out.resize(size_t(v.value));
    if (r.size() != sizeof(v) + out.size() * sizeof(tempod_batch_result)) return out = {};
    std::memcpy(out.data(), r.data() + sizeof(v), out.size() * sizeof(tempod_batch_result));
    return out;
  };
  Msg reports;
  reports.add(TEMPOD_OP_REPORT, 0, 3'600'000'000'000, 1);
  reports.add(TEMPOD_OP_REPORT, 0, 3'600'000'000'000, 1);
  reports.add(TEMPOD_OP_REPORT, 0, 1, 0);  // an empty manifest: -EINVAL, as alone
  auto r = roundtrip(s, reports.seal(2), reports.bytes.size());
  ASSERT_EQ(status_of(r), 0);
  auto res = results(r);
  ASSERT_EQ(res.size(), 3u);
  EXPECT_EQ(res[0].status, 0);
  EXPECT_EQ(res[1].status, 0);
  EXPECT_EQ(res[2].status, -EINVAL);
  const uint64_t a = uint64_t(res[0].value);
  const uint64_t b = uint64_t(res[1].value);
  EXPECT_NE(a, b);

  Msg ops;
  ops.add(TEMPOD_OP_REVISE, a, 5'000'000'000);
  ops.add_spread(a, 5'000'000'000, {{1, 2, 5'000'000'000, 6'000'000'000, 7'000'000'000}});
  ops.add(TEMPOD_OP_CANCEL, b, 0);
  ops.add(TEMPOD_OP_CANCEL, b, 0);  // twice: ended, -EINVAL as alone
  ops.add(TEMPOD_OP_CANCEL, 424242, 0);
  ops.add(TEMPOD_OP_RETRIEVAL, a, 0);
  r = roundtrip(s, ops.seal(3), ops.bytes.size());
  ASSERT_EQ(status_of(r), 0);
  res = results(r);
  ASSERT_EQ(res.size(), 6u);
  EXPECT_EQ(res[0].status, 0);
  EXPECT_EQ(res[1].status, 0);
  EXPECT_EQ(res[2].status, 0);
  EXPECT_EQ(res[3].status, -EINVAL);
  EXPECT_EQ(res[4].status, -ENOENT);
  EXPECT_EQ(res[5].status, 0);
  EXPECT_TRUE(res[5].value == TEMPO_RETRIEVAL_READY || res[5].value == TEMPO_RETRIEVAL_WAIT);

  // Malformed: the whole message is refused and its valid entries do not run.
  Msg c1;
  c1.add(TEMPOD_OP_REPORT, 0, 1, 1);
  c1.add(TEMPOD_OP_QUERY, a, 0);  // not an op a batch carries
  Msg c2;
  c2.add(TEMPOD_OP_REPORT, 0, 1, 1);
  c2.add(TEMPOD_OP_CANCEL, a, 7);  // an argument CANCEL does not take
  Msg c3;
  c3.add(TEMPOD_OP_REPORT, 0, 1, 1);
  c3.add(TEMPOD_OP_REVISE, a, 1, 1);  // objects on a REVISE
  Msg c4;
  c4.add(TEMPOD_OP_REPORT, 0, 1, 1);
  c4.count = 2;  // more entries than the message holds
  Msg c5;
  c5.add(TEMPOD_OP_REPORT, 0, 1, 1);
  c5.bytes.resize(c5.bytes.size() + 8);  // trailing bytes
  Msg c6;
  c6.add(TEMPOD_OP_REPORT, 0, 1, 1);
  c6.add_spread(a, 1, {{3, 2, 4, 5, 6}});  // a spread that is not non-decreasing
  Msg c7;
  c7.add(TEMPOD_OP_REPORT, 0, 1, 1);
  c7.add_spread(a, 1, {{1, 2, 3, 4, 5}}, 32);  // a spread cut short
  uint64_t seq = 10;
  for (Msg* m : {&c1, &c2, &c3, &c4, &c5, &c6, &c7}) {
    r = roundtrip(s, m->seal(seq), m->bytes.size());
    EXPECT_EQ(status_of(r), -EINVAL) << "message " << seq;
    ++seq;
  }
  tempod_hdr st{TEMPOD_OP_STATS, TEMPOD_PROTO_VERSION, sizeof(tempod_hdr), 99, 0, 0};
  r = roundtrip(s, &st, sizeof(st));
  ASSERT_EQ(r.size(), sizeof(tempod_hdr) + sizeof(tempo_counters));
  tempo_counters stats{};
  std::memcpy(&stats, r.data() + sizeof(tempod_hdr), sizeof(stats));
  EXPECT_EQ(stats.claims_reported, 2u);  // none of the refused messages' reports ran
  close(s);
}

// The per-step call in client mode sends each claim's TTU spread (REVISE_SPREAD): under
// tempo-risk a claim whose spread straddles its TTR commits at the step, under tempo it
// waits. The straddling step (tests/common/straddling_step.h): retrieval after ~16 ms or
// ~330 ms, ~170 ms at the mean; the claim's one 256 KiB object stages in ~125 ms at the
// 2 MiB/s calibrated rate.
TEST_F(TempodTest, RuntimeStepSendsTheSpreadToTheDaemonsRiskRule) {
  for (const char* policy : {"tempo", "tempo-risk"}) {
    SCOPED_TRACE(policy);
    write_conf(std::string("policy = ") + policy + "\ncalibration_rate = 2MiB\ntick = 60s\n");
    start_daemon();
    tempo_ctx* c = must_client();
    ASSERT_NE(c, nullptr);
    put(c, 31);
    const tempo_object objs[] = {{31, kObjectBytes}};
    tempo_claim_id id = 0;
    ASSERT_EQ(tempo_claim_report(c, objs, 1, 3'600'000'000'000, &id), 0);
    tempo_claim_info info{};
    ASSERT_EQ(tempo_test::run_straddling_step(c, id, &info), 0);
    EXPECT_GT(info.ttu_ns, 140'000'000);  // the point TTU: after the TTR
    EXPECT_EQ(info.state != TEMPO_CLAIM_PLANNED, std::string(policy) == "tempo-risk");
    ASSERT_EQ(tempo_claim_cancel(c, id), 0);
    tempo_ctx_unref(c);
    stop_daemon();
  }
}

// Under tempo-risk a claim's requests behind it are those of its own engine's queue, not
// the other engines' the daemon merges with it. W = 0.00005 GiB*s against the 256 KiB claim
// (B = 0.000244 GiB): nobody behind, the ratio is 0.83 and the straddling step's quantile
// there is ~330 ms, after the ~125 ms TTR: the claim waits. Engine B's 64 waiting requests
// do not count; 64 of its own engine's behind it (ratio 0.07, quantile ~16 ms) commit it.
TEST_F(TempodTest, RiskCountsOnlyTheClaimsOwnEnginesQueueBehindIt) {
  tempo_ctx* a = nullptr;
  tempo_ctx* b = nullptr;
  start_two_engines("policy = tempo-risk:0.00005\ncalibration_rate = 2MiB\ntick = 60s\n",
                    "engine-a", &a, "engine-b", &b);
  ASSERT_FALSE(HasFatalFailure());
  put(a, 71);
  const tempo_object objs[] = {{71, kObjectBytes}};
  tempo_claim_id id = 0;
  ASSERT_EQ(tempo_claim_report(a, objs, 1, 3'600'000'000'000, &id), 0);
  std::vector<tempo_claim_id> queue(64, TEMPO_NO_CLAIM);
  ASSERT_EQ(tempo_order_update(b, queue.data(), queue.size()), 0);
  tempo_claim_info info{};
  ASSERT_EQ(tempo_test::run_straddling_step(a, id, &info), 0);  // orders A's queue: the claim
  EXPECT_GT(info.ttu_ns, 140'000'000);
  EXPECT_EQ(info.state, TEMPO_CLAIM_PLANNED);
  queue.insert(queue.begin(), id);
  ASSERT_EQ(tempo_order_update(a, queue.data(), queue.size()), 0);
  ASSERT_EQ(tempo_claim_query(a, id, &info, sizeof info), 0);
  EXPECT_NE(info.state, TEMPO_CLAIM_PLANNED);
  ASSERT_EQ(tempo_claim_cancel(a, id), 0);
  tempo_ctx_unref(b);
  tempo_ctx_unref(a);
}

// queue-K over several engines counts each engine's own queue: under queue-1 both engines'
// first claims commit, not only the first place of the merged order (A's first, then B's).
TEST_F(TempodTest, QueueKCountsEachEnginesOwnQueue) {
  tempo_ctx* a = nullptr;
  tempo_ctx* b = nullptr;
  start_two_engines("policy = queue-1\ntick = 60s\n", "engine-a", &a, "engine-b", &b);
  ASSERT_FALSE(HasFatalFailure());
  tempo_claim_id ids[3] = {};
  for (uint64_t k = 0; k < 3; ++k) {
    put(a, 81 + k);
    const tempo_object o[] = {{81 + k, kObjectBytes}};
    ASSERT_EQ(tempo_claim_report(k < 2 ? a : b, o, 1, 3'600'000'000'000, &ids[k]), 0);
  }
  ASSERT_EQ(tempo_order_update(a, ids, 2), 0);
  ASSERT_EQ(tempo_order_update(b, ids + 2, 1), 0);
  tempo_claim_info info{};
  ASSERT_EQ(tempo_claim_query(a, ids[0], &info, sizeof info), 0);
  EXPECT_NE(info.state, TEMPO_CLAIM_PLANNED);
  ASSERT_EQ(tempo_claim_query(a, ids[1], &info, sizeof info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_PLANNED);
  ASSERT_EQ(tempo_claim_query(b, ids[2], &info, sizeof info), 0);
  EXPECT_NE(info.state, TEMPO_CLAIM_PLANNED);
  for (uint64_t k = 0; k < 3; ++k) ASSERT_EQ(tempo_claim_cancel(k < 2 ? a : b, ids[k]), 0);
  tempo_ctx_unref(b);
  tempo_ctx_unref(a);
}

// Shares of the protected budget: two engines weighted 1:3, both asking for more than the
// budget, each gets its part; an engine without live claims lends its part, and gets it
// back as the borrower's claims end (commitments are never revoked).
TEST_F(TempodTest, SharesDivideTheBudgetAndAnIdleEnginesPartIsLent) {
  tempo_ctx* small = nullptr;
  tempo_ctx* big = nullptr;
  start_two_engines("daemon.shares = small:1,big:3\n", "small", &small, "big", &big);
  ASSERT_FALSE(HasFatalFailure());
  for (uint64_t k = 0; k < 56; ++k) put(small, 1000 + k);
  // 16 claims of small (4 MiB) and 40 of big (10 MiB) against 8 MiB, planned for later.
  std::vector<tempo_claim_id> sc;
  std::vector<tempo_claim_id> bc;
  for (uint64_t k = 0; k < 56; ++k) {
    const tempo_object o[] = {{1000 + k, kObjectBytes}};
    tempo_claim_id id = 0;
    ASSERT_EQ(tempo_claim_report(k < 16 ? small : big, o, 1, 3'600'000'000'000, &id), 0);
    (k < 16 ? sc : bc).push_back(id);
  }
  // All due now: each engine commits up to its part, 2 MiB and 6 MiB.
  for (tempo_claim_id id : sc) ASSERT_EQ(tempo_claim_revise(small, id, 0), 0);
  for (tempo_claim_id id : bc) ASSERT_EQ(tempo_claim_revise(big, id, 0), 0);
  ASSERT_EQ(tempo_ctx_tick(big), 0);
  EXPECT_EQ(committed(small, sc), 8u);
  EXPECT_EQ(committed(big, bc), 24u);
  tempo_counters st{};
  ASSERT_EQ(tempo_ctx_stats(big, &st, sizeof st), 0);
  EXPECT_EQ(st.ledger_bytes, 8u << 20);

  // small goes idle: big borrows its part once small's protection is released.
  for (tempo_claim_id id : sc) tempo_claim_cancel(small, id);
  auto until = Clock::now() + std::chrono::seconds(20);
  while (committed(big, bc) < 32 && Clock::now() < until) {
    tempo_ctx_tick(big);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(committed(big, bc), 32u);

  // small is busy again: nothing is revoked, so it waits for big's claims to end, and
  // then gets its part (big, now over its 6 MiB, commits no more).
  std::vector<tempo_claim_id> again;
  for (uint64_t k = 0; k < 4; ++k) {
    const tempo_object o[] = {{1000 + k, kObjectBytes}};
    tempo_claim_id id = 0;
    ASSERT_EQ(tempo_claim_report(small, o, 1, 0, &id), 0);
    again.push_back(id);
  }
  EXPECT_EQ(committed(small, again), 0u);
  size_t ended = 0;
  for (tempo_claim_id id : bc) {
    tempo_claim_info info{};
    if (ended < 8 && tempo_claim_query(big, id, &info, sizeof info) == 0 &&
        info.state == TEMPO_CLAIM_STAGE_READY && tempo_claim_cancel(big, id) == 0)
      ++ended;
  }
  ASSERT_EQ(ended, 8u);
  until = Clock::now() + std::chrono::seconds(20);
  while (committed(small, again) < 4 && Clock::now() < until) {
    tempo_ctx_tick(small);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(committed(small, again), 4u);
  EXPECT_EQ(committed(big, bc), 24u);
  tempo_ctx_unref(small);
  tempo_ctx_unref(big);
}

// tempoctl claims --daemon: every engine's claims with the engine, the connection and the
// engine's request id (tempo_claim_label).
TEST_F(TempodTest, TempoctlClaimsShowsEngineAndRequestOfEachClaim) {
  start_daemon();
  tempo_ctx* c = nullptr;
  ASSERT_EQ(client(&c, "vllm-7"), 0);
  const tempo_object objs[] = {{5, kObjectBytes}};
  tempo_claim_id id = 0;
  ASSERT_EQ(tempo_claim_report(c, objs, 1, 3'600'000'000'000, &id), 0);
  EXPECT_EQ(tempo_claim_label(c, id, "cmpl-42-0"), 0);
  EXPECT_EQ(tempo_claim_label(c, id + 5, "x"), -ENOENT);
  EXPECT_EQ(tempo_claim_label(c, id, std::string(40, 'x').c_str()), -EINVAL);
  EXPECT_EQ(tempo_claim_label(c, id, nullptr), -EINVAL);
  int code = -1;
  const std::string out = tempoctl("claims --json --daemon " + socket_, &code);
  EXPECT_EQ(code, 0);
  for (const std::string& want :
       std::vector<std::string>{"\"engine\": \"vllm-7\"", "\"request\": \"cmpl-42-0\"",
                                "\"state\": \"PLANNED\"", "\"id\": " + std::to_string(id)})
    EXPECT_NE(out.find(want), std::string::npos) << want << " not in:\n" << out;
  const std::string table = tempoctl("claims --daemon " + socket_, &code);
  EXPECT_EQ(code, 0);
  EXPECT_NE(table.find("vllm-7"), std::string::npos) << table;
  EXPECT_NE(table.find("cmpl-42-0"), std::string::npos) << table;
  tempoctl("claims --daemon " + dir_ + "/none 2>/dev/null", &code);
  EXPECT_EQ(code, 1);
  tempo_ctx_unref(c);
}

// tempo_claim_set_layers in client mode: the daemon's stack answers as an in-process one,
// and a layer-wise claim projects its lead TTR (its first group's readiness when the
// groups are needed far apart) below the same claim's whole TTR.
TEST_F(TempodTest, SetLayersThroughTheDaemon) {
  start_daemon();
  tempo_ctx* c = must_client();
  tempo_ctx* other = must_client();  // an engine of its own
  std::vector<tempo_object> objs;
  for (uint64_t k = 1; k <= 64; ++k) objs.push_back({1000 + k, 16 * kObjectBytes});
  tempo_claim_id whole = 0, layered = 0;
  ASSERT_EQ(tempo_claim_report(c, objs.data(), objs.size(), 3'600'000'000'000, &whole), 0);
  ASSERT_EQ(tempo_claim_report(c, objs.data(), objs.size(), 3'600'000'000'000, &layered), 0);
  EXPECT_EQ(tempo_claim_set_layers(c, layered, 2, 1'000'000'000'000), 0);
  tempo_claim_info w{}, l{};
  ASSERT_EQ(tempo_claim_query(c, whole, &w, sizeof w), 0);
  ASSERT_EQ(tempo_claim_query(c, layered, &l, sizeof l), 0);
  EXPECT_GT(w.ttr_ns, 0);
  // The first 32 objects land before the last 32 (ttr_ns is TTU - laxity, each read at its
  // own instant of the wall clock: equal to within microseconds, not to the nanosecond).
  EXPECT_LT(l.ttr_ns, w.ttr_ns * 3 / 4);
  EXPECT_EQ(tempo_claim_set_layers(c, layered, 1, 0), 0);  // one group undoes it
  ASSERT_EQ(tempo_claim_query(c, layered, &l, sizeof l), 0);
  EXPECT_NEAR(double(l.ttr_ns), double(w.ttr_ns), double(w.ttr_ns) / 100);
  // The errors of the in-process call.
  EXPECT_EQ(tempo_claim_set_layers(other, layered, 2, 0), -ENOENT);  // another engine's
  EXPECT_EQ(tempo_claim_set_layers(c, layered + 1000, 2, 0), -ENOENT);
  EXPECT_EQ(tempo_claim_set_layers(c, layered, 0, 0), -EINVAL);
  EXPECT_EQ(tempo_claim_set_layers(c, layered, 65, 0), -EINVAL);
  EXPECT_EQ(tempo_claim_set_layers(c, layered, 2, -1), -EINVAL);
  EXPECT_EQ(tempo_claim_set_layers(c, layered, 2, INT64_MAX), -EOVERFLOW);
  ASSERT_EQ(tempo_claim_cancel(c, layered), 0);
  EXPECT_EQ(tempo_claim_set_layers(c, layered, 2, 0), -EINVAL);  // ended
  tempo_ctx_unref(other);
  tempo_ctx_unref(c);
}

// tempoctl store ls / verify / gc --daemon: the live store, through the daemon that owns it.
// A damaged object is found by verify (exit 1) and dropped by gc.
TEST_F(TempodTest, TempoctlStoreWorksOnTheLiveStoreThroughTheDaemon) {
  start_daemon();
  tempo_ctx* c = must_client();
  ASSERT_NE(c, nullptr);
  for (uint64_t k : {0x101, 0x102, 0x103}) put(c, k);
  int code = -1;
  std::string out = tempoctl("store ls --json --daemon " + socket_, &code);
  EXPECT_EQ(code, 0);
  for (const char* want : {"\"key\": 257", "\"key\": 258", "\"key\": 259", "\"size\": 262144"})
    EXPECT_NE(out.find(want), std::string::npos) << want << " not in:\n" << out;
  out = tempoctl("store verify --daemon " + socket_, &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("3 objects verified"), std::string::npos) << out;
  EXPECT_NE(out.find(", 0 bad"), std::string::npos) << out;
  // Damage 0x102's bytes on disk (a bad sector), as nothing but the disk would.
  const std::string ls = tempoctl("store ls --daemon " + socket_, &code);
  const size_t line = ls.find("0000000000000102");
  ASSERT_NE(line, std::string::npos) << ls;
  unsigned long long size = 0, offset = 0;
  ASSERT_EQ(std::sscanf(ls.c_str() + line, "%*s %llu %llu", &size, &offset), 2);
  {
    std::fstream data(store_ + "/data", std::ios::in | std::ios::out | std::ios::binary);
    data.seekp(static_cast<std::streamoff>(offset + 100));
    data.write("garbage!", 8);
  }
  out = tempoctl("store verify --json --daemon " + socket_, &code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("\"verified\": 2"), std::string::npos) << out;
  EXPECT_NE(out.find("\"key\": 258"), std::string::npos) << out;
  EXPECT_NE(out.find("EBADMSG"), std::string::npos) << out;
  out = tempoctl("store gc --json --daemon " + socket_, &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("\"removed_quarantined\": 1"), std::string::npos) << out;
  EXPECT_NE(out.find("\"objects\": 2"), std::string::npos) << out;
  const uint64_t keys[] = {0x101, 0x102};
  size_t prefix = 0;
  EXPECT_EQ(tempo_store_lookup(c, keys, 2, &prefix), 0);
  EXPECT_EQ(prefix, 1u);  // the daemon's own view agrees
  EXPECT_EQ(tempoctl("store verify --daemon " + socket_ + " >/dev/null", &code), "");
  EXPECT_EQ(code, 0);
  tempoctl("store ls --store " + store_ + " --daemon " + socket_ + " 2>/dev/null", &code);
  EXPECT_EQ(code, 1);  // one of the two
  tempo_ctx_unref(c);
}

// On time or late, and the commit margin, in `tempoctl metrics` and the control socket's stats.
TEST_F(TempodTest, MetricsCountOnTimeAndLateRetrievalsAndCommitMargins) {
  write_conf("control_socket = " + dir_ + "/control.sock\n");
  start_daemon();
  tempo_ctx* c = must_client();
  ASSERT_NE(c, nullptr);
  put(c, 201);
  put(c, 202);
  // Committed at once (due now), retrieved once stage-ready: on time.
  const tempo_object a_obj[] = {{201, kObjectBytes}};
  tempo_claim_id a = 0;
  ASSERT_EQ(tempo_claim_report(c, a_obj, 1, 0, &a), 0);
  tempo_claim_info info{};
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (tempo_claim_query(c, a, &info, sizeof info) == 0 &&
         info.state != TEMPO_CLAIM_STAGE_READY && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(info.state, TEMPO_CLAIM_STAGE_READY);
  int outcome = -1;
  ASSERT_EQ(tempo_claim_request_retrieval(c, a, &outcome), 0);
  EXPECT_EQ(outcome, TEMPO_RETRIEVAL_READY);
  // Planned for an hour, retrieved now: it commits then and is still staging: late.
  const tempo_object b_obj[] = {{202, kObjectBytes}};
  tempo_claim_id b = 0;
  ASSERT_EQ(tempo_claim_report(c, b_obj, 1, 3'600'000'000'000, &b), 0);
  ASSERT_EQ(tempo_claim_request_retrieval(c, b, &outcome), 0);
  EXPECT_EQ(outcome, TEMPO_RETRIEVAL_WAIT);
  int code = -1;
  const std::string out = tempoctl("metrics --daemon " + socket_, &code);
  EXPECT_EQ(code, 0);
  for (const char* want :
       {"\ntempo_retrievals_on_time_total 1\n", "\ntempo_retrievals_late_total 1\n",
        "# TYPE tempo_commit_margin_seconds histogram\n",
        "\ntempo_commit_margin_seconds_bucket{le=\"10\"} 1\n",
        "\ntempo_commit_margin_seconds_bucket{le=\"+Inf\"} 2\n",
        "\ntempo_commit_margin_seconds_count 2\n"})
    EXPECT_NE(out.find(want), std::string::npos) << want << " not in:\n" << out;
  const std::string stats = tempoctl("stats --json --socket " + dir_ + "/control.sock", &code);
  EXPECT_EQ(code, 0);
  for (const char* want : {"\"retrievals_on_time\": 1", "\"retrievals_late\": 1"})
    EXPECT_NE(stats.find(want), std::string::npos) << want << " not in:\n" << stats;
  tempo_ctx_unref(c);
}

// systemd's Type=notify: READY=1 arrives on $NOTIFY_SOCKET once the socket serves.
TEST_F(TempodTest, TellsSystemdItIsReadyOnceItServes) {
  const std::string notify = dir_ + "/notify";
  const int n = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, notify.c_str());
  ASSERT_EQ(bind(n, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  setenv("NOTIFY_SOCKET", notify.c_str(), 1);
  start_daemon();
  unsetenv("NOTIFY_SOCKET");
  char buf[128] = {};
  ASSERT_GT(recv(n, buf, sizeof(buf) - 1, 0), 0);
  EXPECT_EQ(std::string(buf), "READY=1\nMAINPID=" + std::to_string(daemon_));
  close(n);
}

TEST_F(TempodTest, MalformedRequestsAreRefusedWithTheirErrno) {
  start_daemon();
  const int s = raw_connect();
  ASSERT_GE(s, 0);
  auto roundtrip = [&](const void* msg, size_t len) {
    EXPECT_EQ(send(s, msg, len, 0), ssize_t(len));
    tempod_hdr r{};
    EXPECT_GE(recv(s, &r, sizeof(r), 0), ssize_t(sizeof(r)));
    return r.status;
  };
  tempod_hdr stats{TEMPOD_OP_STATS, TEMPOD_PROTO_VERSION, sizeof(tempod_hdr), 1, 0, 0};
  EXPECT_EQ(roundtrip(&stats, sizeof(stats)), -EPROTO);  // before HELLO
  tempod_hello hello{};
  hello.hdr = {TEMPOD_OP_HELLO, TEMPOD_PROTO_VERSION, sizeof(hello), 2, 0, 0};
  hello.reserved = 1;
  EXPECT_EQ(roundtrip(&hello, sizeof(hello)), -EINVAL);
  hello.reserved = 0;
  hello.hdr.version = 9;
  EXPECT_EQ(roundtrip(&hello, sizeof(hello)), -EPROTONOSUPPORT);
  hello.hdr.version = TEMPOD_PROTO_VERSION;
  EXPECT_EQ(roundtrip(&hello, sizeof(hello)), 0);
  tempod_hdr unknown{99, TEMPOD_PROTO_VERSION, sizeof(tempod_hdr), 3, 0, 0};
  EXPECT_EQ(roundtrip(&unknown, sizeof(unknown)), -ENOTTY);
  stats.len = 100;
  EXPECT_EQ(roundtrip(&stats, sizeof(stats)), -EINVAL);
  // The engine operations' own checks.
  tempod_keys keys{};
  keys.hdr = {TEMPOD_OP_STORE_LOOKUP, TEMPOD_PROTO_VERSION, sizeof(keys), 4, 0, 0};
  keys.count = 1;  // one key announced, none sent
  EXPECT_EQ(roundtrip(&keys, sizeof(keys)), -EINVAL);
  keys.count = 0;
  keys.reserved = 1;
  EXPECT_EQ(roundtrip(&keys, sizeof(keys)), -EINVAL);
  tempod_key del{};
  del.hdr = {TEMPOD_OP_STORE_DELETE, TEMPOD_PROTO_VERSION, sizeof(del), 5, 0, 0};
  del.reserved = 1;
  EXPECT_EQ(roundtrip(&del, sizeof(del)), -EINVAL);
  tempod_claims claims{};
  claims.hdr = {TEMPOD_OP_CLAIMS, TEMPOD_PROTO_VERSION, sizeof(claims), 6, 0, 0};
  EXPECT_EQ(roundtrip(&claims, sizeof(claims)), -EINVAL);  // max 0
  claims.max = TEMPOD_MAX_CLAIMS + 1;
  EXPECT_EQ(roundtrip(&claims, sizeof(claims)), -EINVAL);
  tempod_label label{};
  label.hdr = {TEMPOD_OP_LABEL, TEMPOD_PROTO_VERSION, sizeof(label), 7, 0, 0};
  label.id = 1;
  EXPECT_EQ(roundtrip(&label, sizeof(label)), -ENOENT);    // no such claim of this engine
  std::memset(label.request, 'x', sizeof(label.request));  // not NUL-terminated
  EXPECT_EQ(roundtrip(&label, sizeof(label)), -EINVAL);
  tempod_layers layers{};
  layers.hdr = {TEMPOD_OP_SET_LAYERS, TEMPOD_PROTO_VERSION, sizeof(layers), 11, 0, 0};
  layers.id = 1;
  layers.groups = 2;
  EXPECT_EQ(roundtrip(&layers, sizeof(layers)), -ENOENT);  // no such claim of this engine
  layers.reserved = 1;
  EXPECT_EQ(roundtrip(&layers, sizeof(layers)), -EINVAL);
  tempod_store_list list{};
  list.hdr = {TEMPOD_OP_STORE_LIST, TEMPOD_PROTO_VERSION, sizeof(list), 8, 0, 0};
  EXPECT_EQ(roundtrip(&list, sizeof(list)), -EINVAL);  // max 0
  list.max = 1;
  list.quarantined = 2;
  EXPECT_EQ(roundtrip(&list, sizeof(list)), -EINVAL);
  tempod_claim_arg cancel{};
  cancel.hdr = {TEMPOD_OP_CANCEL, TEMPOD_PROTO_VERSION, sizeof(cancel), 9, 0, 0};
  cancel.arg = 1;  // CANCEL takes no argument
  EXPECT_EQ(roundtrip(&cancel, sizeof(cancel)), -EINVAL);
  tempod_claim_arg gc{};
  gc.hdr = {TEMPOD_OP_STORE_GC, TEMPOD_PROTO_VERSION, sizeof(gc), 10, 0, 0};  // a body
  EXPECT_EQ(roundtrip(&gc, sizeof(gc)), -EINVAL);
  gc.hdr.op = TEMPOD_OP_TIMELINESS;
  EXPECT_EQ(roundtrip(&gc, sizeof(gc)), -EINVAL);
  EXPECT_EQ(roundtrip(&hello, sizeof(hello)), -EINVAL);  // a second HELLO
  // A packet shorter than a header has no seq to answer: the daemon closes the connection.
  EXPECT_EQ(send(s, "abcd", 4, 0), 4);
  char buf[64];
  EXPECT_EQ(recv(s, buf, sizeof(buf), 0), 0);
  close(s);
  tempo_ctx* c = must_client();  // and serves the others
  tempo_counters st{};
  EXPECT_EQ(tempo_ctx_stats(c, &st, sizeof st), 0);
  tempo_ctx_unref(c);
}

// daemon.metrics_listen: GET /metrics over a raw socket answers 200 with exactly the text
// `tempoctl metrics` prints; other paths 404, one reply per connection.
TEST_F(TempodTest, MetricsListenerServesThePrometheusText) {
  const uint16_t port = start_with_metrics();
  tempo_ctx* c = must_client();
  ASSERT_NE(c, nullptr);
  report_three_cancel_one(c);
  const std::string reply =
      metrics_exchange(metrics_connect(port), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  const size_t body = reply.find("\r\n\r\n");
  ASSERT_NE(body, std::string::npos) << reply;
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 200 OK\r\n")) << reply;
  EXPECT_NE(reply.find("Content-Type: text/plain; version=0.0.4\r\n"), std::string::npos);
  int code = -1;
  const std::string text = tempoctl("metrics --daemon " + socket_, &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(reply.substr(body + 4), text);
  EXPECT_NE(text.find("\ntempo_claims_reported_total 3\n"), std::string::npos) << text;
  EXPECT_TRUE(metrics_exchange(metrics_connect(port), "GET / HTTP/1.1\r\n\r\n")
                  .starts_with("HTTP/1.1 404 "));
  tempo_ctx_unref(c);
}

// Hostile peers of the metrics listener: garbage and an over-long request get 400 and are
// closed; silent (slowloris) connections hold no one up: the daemon serves its clients and
// another scrape meanwhile, connections past the limit are closed at once, and the silent
// ones are closed at their deadline.
TEST_F(TempodTest, MetricsListenerSurvivesGarbageAndSlowPeers) {
  const uint16_t port = start_with_metrics();
  EXPECT_TRUE(metrics_exchange(metrics_connect(port), std::string("\x16\x03\x01junk\r\n\r\n"))
                  .starts_with("HTTP/1.1 400 "));
  EXPECT_TRUE(
      metrics_exchange(metrics_connect(port), "GET /" + std::string(8192, 'a') + " HTTP/1.1")
          .starts_with("HTTP/1.1 400 "));
  // Silent peers: one that sends half a request line, the rest nothing.
  std::vector<int> silent;
  for (int i = 0; i < 8; ++i) silent.push_back(metrics_connect(port));
  ASSERT_EQ(send(silent[0], "GET /met", 8, MSG_NOSIGNAL), 8);
  // The listener is full: a ninth connection is closed without a reply.
  EXPECT_EQ(metrics_exchange(metrics_connect(port), "GET /metrics HTTP/1.1\r\n\r\n"), "");
  // Clients of the daemon are not held up.
  tempo_ctx* c = must_client();
  ASSERT_NE(c, nullptr);
  report_three_cancel_one(c);
  // The silent ones are closed at their deadline (10 s), after which a scrape is answered.
  for (int s : silent) EXPECT_EQ(metrics_exchange(s, ""), "");
  EXPECT_TRUE(metrics_exchange(metrics_connect(port), "GET /metrics HTTP/1.1\r\n\r\n")
                  .starts_with("HTTP/1.1 200 OK\r\n"));
  tempo_ctx_unref(c);
}

}  // namespace
