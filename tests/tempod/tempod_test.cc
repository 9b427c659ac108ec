// tempod with real processes: the daemon binary, clients through libtempo.so's client mode
// (the exported C ABI only), client processes killed with SIGKILL, a client that never reads.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "client/tempod_proto.h"
#include "tempo/tempo.h"
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
  static tempo_stats settle(tempo_ctx* c) {
    tempo_stats s{};
    const auto until = Clock::now() + std::chrono::seconds(10);
    do {
      EXPECT_EQ(tempo_ctx_stats(c, &s), 0);
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
  ASSERT_EQ(tempo_claim_query(c, id, &info), 0);
  EXPECT_EQ(info.state, TEMPO_CLAIM_PLANNED);
  EXPECT_EQ(info.bytes, 2 * kObjectBytes);
  EXPECT_EQ(tempo_claim_transfer_end(c, id), -EINVAL);
  EXPECT_EQ(tempo_claim_transfer_begin(c, id), -EINVAL);
  const tempo_claim_id order[] = {TEMPO_NO_CLAIM, id};
  EXPECT_EQ(tempo_order_update(c, order, 2), 0);
  EXPECT_EQ(tempo_sim_advance(c, 1), -EOPNOTSUPP);

  // Claims belong to their connection: another client cannot see or touch this one.
  tempo_ctx* other = must_client();
  EXPECT_EQ(tempo_claim_query(other, id, &info), -ENOENT);
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
  tempo_stats s{};
  ASSERT_EQ(tempo_ctx_stats(c, &s), 0);
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
  EXPECT_GE(killed, seconds * 5);
  const tempo_stats s = settle(setup);
  EXPECT_EQ(s.ledger_bytes, 0u);
  EXPECT_EQ(s.reserved_bytes, 0u);
  EXPECT_EQ(s.pinned_bytes, 0u);
  EXPECT_EQ(s.claims_live, 0u);
  EXPECT_GT(s.claims_reported,
            200u);  // the clients worked (about 2,000 in 5 s normally; fewer under TSan and load)
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
  tempo_stats s{};
  EXPECT_EQ(tempo_ctx_stats(c, &s), -ECONNRESET);
  EXPECT_EQ(tempo_ctx_stats(c, &s), -ENOENT);  // the socket is gone with the daemon
  start_daemon();
  EXPECT_EQ(tempo_ctx_stats(c, &s), 0);
  EXPECT_EQ(s.claims_live, 0u);
  tempo_claim_info info{};
  EXPECT_EQ(tempo_claim_query(c, id, &info), -ENOENT);
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

  tempo_ctx* c = must_client();
  ASSERT_NE(c, nullptr);
  const tempo_object objs[] = {{41, kObjectBytes}};
  const auto t0 = Clock::now();
  for (int i = 0; i < 1000; ++i) {
    tempo_claim_id id = 0;
    ASSERT_EQ(tempo_claim_report(c, objs, 1, 1'000'000'000, &id), 0);
    ASSERT_EQ(tempo_claim_cancel(c, id), 0);
  }
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  close(s);
  tempo_ctx_unref(c);
}

// tempoctl metrics: the daemon's counters as Prometheus text, exact values.
TEST_F(TempodTest, TempoctlMetricsPrintsPrometheusText) {
  start_daemon();
  tempo_ctx* c = must_client();
  ASSERT_NE(c, nullptr);
  const tempo_object objs[] = {{51, kObjectBytes}};
  tempo_claim_id id = 0;
  for (int i = 0; i < 3; ++i) ASSERT_EQ(tempo_claim_report(c, objs, 1, 3'600'000'000'000, &id), 0);
  ASSERT_EQ(tempo_claim_cancel(c, id), 0);
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
  // A packet shorter than a header has no seq to answer: the daemon closes the connection.
  EXPECT_EQ(send(s, "abcd", 4, 0), 4);
  char buf[64];
  EXPECT_EQ(recv(s, buf, sizeof(buf), 0), 0);
  close(s);
  tempo_ctx* c = must_client();  // and serves the others
  tempo_stats st{};
  EXPECT_EQ(tempo_ctx_stats(c, &st), 0);
  tempo_ctx_unref(c);
}

}  // namespace
