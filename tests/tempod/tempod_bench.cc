// tempod's benchmarks (make bench-tempod), each beside the limit it is measured against in
// the same run:
//   1. claim report round trip through tempod vs in-process (p50/p99), and vs a bare
//      SOCK_SEQPACKET ping-pong between two processes (the transport's floor);
//   2. claim operations per second (report + cancel) with 1, 2, 4, 8 client processes, one
//      call per operation (the C ABI) and batched (BATCH messages of kBatch reports, then
//      kBatch cancels, on the protocol directly);
//   3. a client reading a claim's mapped extents vs memcpy between private buffers.
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "client/tempod_proto.h"
#include "tempo/tempo.h"

namespace {

using Clock = std::chrono::steady_clock;

double ns_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
}

void die(const char* what, int r) {
  std::fprintf(stderr, "tempod_bench: %s: %s\n", what, std::strerror(-r));
  std::exit(1);
}

tempo_ctx* open_ctx(const std::vector<std::pair<std::string, std::string>>& kv) {
  tempo_config* cfg = nullptr;
  tempo_config_new(&cfg);
  for (const auto& [k, v] : kv)
    if (tempo_config_set(cfg, k.c_str(), v.c_str()) != 0) die(tempo_config_error(cfg), -EINVAL);
  tempo_ctx* c = nullptr;
  if (const int r = tempo_ctx_new(cfg, &c); r != 0) {
    std::fprintf(stderr, "%s\n", tempo_config_error(cfg));
    die("tempo_ctx_new", r);
  }
  tempo_config_free(cfg);
  return c;
}

struct Percentiles {
  double p50, p99;
};

Percentiles percentiles(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[v.size() * 99 / 100]};
}

// Process `pid` (0: this one) on CPU `cpu` only, or on every CPU for -1.
void pin(pid_t pid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int n = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  for (int i = 0; i < n; ++i)
    if (cpu < 0 || i == cpu) CPU_SET(i, &set);
  if (sched_setaffinity(pid, sizeof(set), &set) != 0) die("sched_setaffinity", -errno);
}

// Every thread of process `pid` on CPU `cpu` (-1: every CPU): tempod's loop thread runs
// where the transport's echo ran.
void pin_all_threads(pid_t pid, int cpu) {
  for (const auto& t :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task"))
    pin(static_cast<pid_t>(std::stol(t.path().filename().string())), cpu);
}

// Report round trips (each claim cancelled after, untimed), appended to *t.
void report_latency(tempo_ctx* c, int n, std::vector<double>* t) {
  const tempo_object objs[] = {{1, 1 << 20}};
  for (int i = 0; i < n; ++i) {
    tempo_claim_id id = 0;
    const auto t0 = Clock::now();
    if (const int r = tempo_claim_report(c, objs, 1, 3'600'000'000'000, &id); r != 0)
      die("report", r);
    t->push_back(ns_since(t0));
    tempo_claim_cancel(c, id);
  }
}

// Round trips of a 40-byte packet between two processes over SOCK_SEQPACKET.
// A SOCK_SEQPACKET echo in a child process on CPU `cpu`: the transport alone.
struct Echo {
  explicit Echo(int cpu) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0) die("socketpair", -errno);
    pid = fork();
    if (pid == 0) {
      close(sv[0]);
      pin(0, cpu);
      char buf[64];
      while (recv(sv[1], buf, sizeof(buf), 0) > 0) send(sv[1], buf, 40, 0);
      _exit(0);
    }
    close(sv[1]);
    fd = sv[0];
  }
  ~Echo() {
    close(fd);
    waitpid(pid, nullptr, 0);
  }
  // n ping-pongs, appended to *t.
  void rounds(int n, std::vector<double>* t) const {
    char buf[64] = {};
    for (int i = 0; i < n; ++i) {
      const auto t0 = Clock::now();
      send(fd, buf, 40, 0);
      recv(fd, buf, sizeof(buf), 0);
      t->push_back(ns_since(t0));
    }
  }
  pid_t pid = -1;
  int fd = -1;
};

// Aggregate operations per second of `clients` processes running `work(k)` for `seconds`:
// each child's `work` runs operations until the time is up and returns how many (< 0 on a
// failure).
template <typename Work>
double aggregate_ops(int clients, double seconds, Work work) {
  int fds[2];
  if (pipe(fds) != 0) die("pipe", -errno);
  std::vector<pid_t> kids;
  for (int k = 0; k < clients; ++k) {
    const pid_t p = fork();
    if (p == 0) {
      const auto t0 = Clock::now();
      const int64_t ops = work(k, [&] { return ns_since(t0) < seconds * 1e9; });
      const double rate = double(ops) / (ns_since(t0) / 1e9);
      if (ops < 0 || write(fds[1], &rate, sizeof(rate)) != sizeof(rate)) _exit(1);
      _exit(0);
    }
    kids.push_back(p);
  }
  double total = 0;
  for (int k = 0; k < clients; ++k) {
    double rate = 0;
    if (read(fds[0], &rate, sizeof(rate)) != sizeof(rate)) die("a client failed", -EIO);
    total += rate;
  }
  for (pid_t p : kids) waitpid(p, nullptr, 0);
  close(fds[0]);
  close(fds[1]);
  return total;
}

// Report+cancel pairs on one context for `seconds`: operations per second.
double ops_on(tempo_ctx* c, double seconds) {
  const tempo_object objs[] = {{1, 1 << 20}};
  uint64_t ops = 0;
  const auto t0 = Clock::now();
  while (ns_since(t0) < seconds * 1e9) {
    tempo_claim_id id = 0;
    if (const int r = tempo_claim_report(c, objs, 1, 3'600'000'000'000, &id); r != 0)
      die("report", r);
    tempo_claim_cancel(c, id);
    ops += 2;
  }
  return double(ops) / (ns_since(t0) / 1e9);
}

// Report+cancel operations per second of `clients` processes, one C ABI call each.
double claim_ops(const std::string& socket, int clients, double seconds) {
  return aggregate_ops(clients, seconds, [&](int k, auto running) -> int64_t {
    tempo_ctx* c = open_ctx({{"device", "daemon"}, {"daemon.socket", socket}});
    const tempo_object objs[] = {{uint64_t(k) + 1, 1 << 20}};
    int64_t ops = 0;
    while (running()) {
      tempo_claim_id id = 0;
      if (tempo_claim_report(c, objs, 1, 3'600'000'000'000, &id) != 0 ||
          tempo_claim_cancel(c, id) != 0)
        return -1;
      ops += 2;
    }
    tempo_ctx_unref(c);
    return ops;
  });
}

constexpr uint32_t kBatch = 128;

// One BATCH round trip on a raw protocol connection: `ops` entries of `op` (REPORT of one
// 1 MiB object, or CANCEL of ids[i]); REPORT's ids into ids. false on any failure.
bool batch_roundtrip(int s, uint16_t op, uint64_t key, std::vector<uint64_t>& ids,
                     std::vector<std::byte>& buf) {
  const bool report = op == TEMPOD_OP_REPORT;
  const size_t entry = sizeof(tempod_batch_entry) + (report ? sizeof(tempo_object) : 0);
  buf.resize(sizeof(tempod_batch) + kBatch * entry);
  tempod_batch b{};
  b.hdr = {TEMPOD_OP_BATCH, TEMPOD_PROTO_VERSION, uint32_t(buf.size()), 1, 0, 0};
  b.count = kBatch;
  std::memcpy(buf.data(), &b, sizeof(b));
  for (uint32_t i = 0; i < kBatch; ++i) {
    const tempod_batch_entry e{op, 0, report ? 1u : 0u, report ? 0 : ids[i],
                               report ? 3'600'000'000'000 : 0};
    std::byte* at = buf.data() + sizeof(b) + i * entry;
    std::memcpy(at, &e, sizeof(e));
    if (report) {
      const tempo_object o{key, 1 << 20};
      std::memcpy(at + sizeof(e), &o, sizeof(o));
    }
  }
  if (send(s, buf.data(), buf.size(), 0) != ssize_t(buf.size())) return false;
  buf.resize(TEMPOD_MAX_MESSAGE);
  const ssize_t n = recv(s, buf.data(), buf.size(), 0);
  tempod_reply_value v{};
  if (n != ssize_t(sizeof(v) + kBatch * sizeof(tempod_batch_result))) return false;
  std::memcpy(&v, buf.data(), sizeof(v));
  if (v.hdr.status != 0) return false;
  for (uint32_t i = 0; i < kBatch; ++i) {
    tempod_batch_result r{};
    std::memcpy(&r, buf.data() + sizeof(v) + i * sizeof(r), sizeof(r));
    if (r.status != 0) return false;
    if (report) ids[i] = uint64_t(r.value);
  }
  return true;
}

// A raw protocol connection after HELLO, or -1.
int raw_client(const std::string& socket) {
  const int s = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket.c_str(), sizeof(addr.sun_path) - 1);
  tempod_hello hello{};
  hello.hdr = {TEMPOD_OP_HELLO, TEMPOD_PROTO_VERSION, sizeof(hello), 1, 0, 0};
  tempod_hello_reply r{};
  if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      send(s, &hello, sizeof(hello), 0) != ssize_t(sizeof(hello)) ||
      recv(s, &r, sizeof(r), 0) != ssize_t(sizeof(r)) || r.hdr.status != 0) {
    close(s);
    return -1;
  }
  return s;
}

// As claim_ops, batched: kBatch reports in one message, then their kBatch cancels.
double batched_claim_ops(const std::string& socket, int clients, double seconds) {
  return aggregate_ops(clients, seconds, [&](int k, auto running) -> int64_t {
    const int s = raw_client(socket);
    if (s < 0) return -1;
    std::vector<uint64_t> ids(kBatch);
    std::vector<std::byte> buf;
    int64_t ops = 0;
    while (running()) {
      if (!batch_roundtrip(s, TEMPOD_OP_REPORT, uint64_t(k) + 1, ids, buf) ||
          !batch_roundtrip(s, TEMPOD_OP_CANCEL, 0, ids, buf))
        return -1;
      ops += 2 * kBatch;
    }
    close(s);
    return ops;
  });
}

double copy_gbps(const std::vector<std::pair<const char*, size_t>>& from, char* to, int rounds) {
  size_t bytes = 0;
  const auto t0 = Clock::now();
  for (int r = 0; r < rounds; ++r) {
    size_t off = 0;
    for (const auto& [src, n] : from) {
      std::memcpy(to + off, src, n);
      off += n;
    }
    bytes += off;
  }
  return double(bytes) / ns_since(t0);
}

}  // namespace

int main() {
  char tmpl[] = "/tmp/tempod-bench-XXXXXX";
  if (!mkdtemp(tmpl)) die("mkdtemp", -errno);
  const std::string dir = tmpl;
  const std::string socket = dir + "/tempod.sock";
  constexpr uint64_t kObject = 4 << 20;
  constexpr int kObjects = 16;
  std::ofstream(dir + "/tempod.conf")
      << "device = uring\nfast_tier_bytes = 256MiB\nbudget_bytes = 128MiB\n"
      << "daemon.socket = " << socket << "\n[uring]\nstore_path = " << dir << "/store\n";
  const pid_t daemon = fork();
  if (daemon == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    const std::string conf = dir + "/tempod.conf";
    execl(TEMPOD_PATH, "tempod", "--config", conf.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  while (access(socket.c_str(), F_OK) != 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  tempo_ctx* c = open_ctx({{"device", "daemon"}, {"daemon.socket", socket}});
  tempo_ctx* in = open_ctx({{"device", "uring"},
                            {"fast_tier_bytes", "256MiB"},
                            {"budget_bytes", "128MiB"},
                            {"uring.store_path", dir + "/store-in-process"}});

  // The round trip beside the transport's, in alternating rounds with the same placement:
  // the client on CPU 0, the server side (tempod, or the echo) on CPU 1 (a wakeup crosses
  // CPUs), then both on CPU 0. Unpinned, where the scheduler put the two processes moved
  // either by 6x from run to run.
  constexpr int kRounds = 10, kPerRound = 2000;
  std::vector<double> warm;
  report_latency(c, 1000, &warm);
  report_latency(in, 1000, &warm);
  const int cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("report round trip (ns)                 p50      p99\n");
  for (const int server_cpu : {1, 0}) {
    if (server_cpu >= cpus) continue;
    pin(0, 0);
    pin_all_threads(daemon, server_cpu);
    const Echo echo(server_cpu);
    std::vector<double> d, floor;
    for (int r = 0; r < kRounds; ++r) {
      report_latency(c, kPerRound, &d);
      echo.rounds(kPerRound, &floor);
    }
    const Percentiles pd = percentiles(d), pf = percentiles(floor);
    const char* where = server_cpu == 0 ? "one CPU" : "two CPUs";
    std::printf("  through tempod, %-8s         %9.0f %8.0f\n", where, pd.p50, pd.p99);
    std::printf("  seqpacket ping-pong, %-8s    %9.0f %8.0f  (transport floor)\n", where, pf.p50,
                pf.p99);
    std::printf("  tempod / floor, %-8s         %9.2f %8.2f\n", where, pd.p50 / pf.p50,
                pd.p99 / pf.p99);
  }
  pin(0, -1);
  pin_all_threads(daemon, -1);
  std::vector<double> p;
  report_latency(in, kRounds * kPerRound, &p);
  const Percentiles pp = percentiles(p);
  std::printf("  in-process (the driver's thread hop)  %9.0f %8.0f\n", pp.p50, pp.p99);

  std::printf("claim ops/s (report + cancel)   one per call   batched by %u\n", kBatch);
  std::printf("  in-process, 1 thread %12.0f  (the stack's own rate, no socket)\n",
              ops_on(in, 2.0));
  for (int n : {1, 2, 4, 8})
    std::printf("  %d clients  %20.0f %16.0f\n", n, claim_ops(socket, n, 2.0),
                batched_claim_ops(socket, n, 2.0));

  std::vector<char> data(kObject);
  std::vector<tempo_object> objs;
  for (int i = 0; i < kObjects; ++i) {
    std::memset(data.data(), i + 1, data.size());
    if (const int r = tempo_store_put(c, 1000 + i, data.data(), data.size()); r != 0)
      die("store_put", r);
    objs.push_back({uint64_t(1000 + i), kObject});
  }
  tempo_claim_id id = 0;
  int outcome = 0;
  if (tempo_claim_report(c, objs.data(), objs.size(), 0, &id) != 0 ||
      tempo_claim_request_retrieval(c, id, &outcome) != 0 ||
      tempo_claim_wait_ready(c, id, 10'000'000'000, &outcome) != 0 ||
      outcome != TEMPO_RETRIEVAL_READY || tempo_claim_transfer_begin(c, id) != 0)
    die("retrieval", -EIO);
  std::vector<tempo_extent> ext(kObjects);
  size_t count = 0;
  if (const int r = tempo_claim_extents(c, id, ext.data(), ext.size(), &count); r != 0)
    die("extents", r);
  std::vector<std::pair<const char*, size_t>> mapped, priv;
  std::vector<char> src(kObject * kObjects, 1), dst(kObject * kObjects, 0);
  for (size_t i = 0; i < count; ++i) {
    mapped.emplace_back(static_cast<const char*>(ext[i].addr), ext[i].bytes);
    priv.emplace_back(src.data() + i * kObject, kObject);
  }
  copy_gbps(mapped, dst.data(), 2);  // fault both in
  copy_gbps(priv, dst.data(), 2);
  double m = 0, l = 0;
  for (int rep = 0; rep < 5; ++rep) {  // interleaved, best of 5 each
    m = std::max(m, copy_gbps(mapped, dst.data(), 10));
    l = std::max(l, copy_gbps(priv, dst.data(), 10));
  }
  std::printf(
      "retrieval of %d x %llu MiB mapped extents: %.2f GB/s; memcpy private->private "
      "%.2f GB/s; ratio %.0f%%\n",
      kObjects, static_cast<unsigned long long>(kObject >> 20), m, l, 100 * m / l);
  tempo_claim_transfer_end(c, id);
  tempo_ctx_unref(c);
  tempo_ctx_unref(in);
  kill(daemon, SIGTERM);
  waitpid(daemon, nullptr, 0);
  std::filesystem::remove_all(dir);
  return 0;
}
