#include "daemon_engines.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include "client/daemon_client.h"
#include "serving_stack.h"
#include "stack/threaded_driver.h"
#include "store/object_store.h"

namespace tempo {

namespace {

constexpr double kGiB = 1ull << 30;
// Longest wait for one claim's readiness (a claim staging longer has failed the run).
constexpr TimeNs kReadyWait = 120 * kNsPerSec;
// Longest wait for tempod to serve, and for the engine processes to connect.
constexpr int kStartupMs = 30000;
// From the last engine connected to the first arrival.
constexpr TimeNs kStartLead = 50 * kNsPerMs;

static_assert(std::is_trivially_copyable_v<RequestRecord>,
              "engine processes hand their records over as bytes");

// Blocking calls run off the engine's driver: readiness waits and ordinary reads.
class CallPool {
 public:
  explicit CallPool(uint32_t threads) {
    for (uint32_t i = 0; i < std::max(threads, 1u); ++i) threads_.emplace_back([this] { work(); });
  }
  ~CallPool() {
    {
      const std::lock_guard hold(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  void post(std::function<void()> fn) {
    {
      const std::lock_guard hold(mu_);
      jobs_.push_back(std::move(fn));
    }
    cv_.notify_one();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      fn();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;  // guarded by mu_
  bool stop_ = false;                       // guarded by mu_
  std::vector<std::thread> threads_;
};

RetrievalOutcome outcome_of(int c_outcome) {
  switch (c_outcome) {
    case TEMPO_RETRIEVAL_READY:
      return RetrievalOutcome::kReady;
    case TEMPO_RETRIEVAL_WAIT:
      return RetrievalOutcome::kWait;
    default:
      return RetrievalOutcome::kOrdinary;
  }
}

// The claim surface over tempod: one round trip per operation (the C ABI's client mode);
// a WAIT outcome's readiness and an ordinary read are waited for on the pool's threads and
// handed to the observer (or `done`) on the engine's driver. TTU spreads go with revisions
// (REVISE_SPREAD) when the daemon's policy reads them; a REPORT carries one TTU.
class DaemonClaims final : public ClaimSurface {
 public:
  DaemonClaims(DaemonClient& client, Driver& driver, uint32_t waiters)
      : c_(client), d_(driver), pool_(waiters) {}

  void set_observer(StackObserver* observer) override { observer_ = observer; }

  size_t held_prefix(std::span<const ObjectKey> keys) override {
    size_t held = 0;
    if (keys.empty()) return 0;
    if (const int r = c_.store_lookup(keys.data(), keys.size(), &held); r != 0)
      throw std::runtime_error("tempod store lookup: " + std::string(std::strerror(-r)));
    return held;
  }
  int report(const Manifest& m, TimeNs ttu, ClaimId* id, const TtuQuantiles*) override {
    std::vector<tempo_object> objects;
    objects.reserve(m.size());
    for (const KvObject& o : m) objects.push_back({o.key, o.bytes});
    tempo_claim_id got = 0;
    const int r = c_.report(objects.data(), objects.size(), ttu, &got);
    *id = got;
    return r;
  }
  int revise(ClaimId id, TimeNs ttu, const TtuQuantiles* spread) override {
    if (spread == nullptr || !c_.reads_spread()) return c_.revise(id, ttu);
    const DaemonClient::BatchOp op{TEMPOD_OP_REVISE_SPREAD, id, ttu, {}, spread};
    std::vector<DaemonClient::BatchResult> results;
    if (const int r = c_.batch({&op, 1}, &results); r != 0) return r;
    return results[0].status;
  }
  // One engine's own queue (a client is one engine): the daemon merges its engines' queues.
  int update_orders(std::span<const std::span<const ClaimId>> orders) override {
    if (orders.size() != 1) return -EINVAL;
    return c_.order(orders[0].data(), orders[0].size());
  }
  int request_retrieval(ClaimId id, RetrievalOutcome* outcome) override {
    int got = 0;
    if (const int r = c_.request_retrieval(id, &got); r != 0) return r;
    *outcome = outcome_of(got);
    if (*outcome == RetrievalOutcome::kWait)
      pool_.post([this, id] {
        int ready = TEMPO_RETRIEVAL_ORDINARY;
        const int r = c_.wait_ready(id, kReadyWait, &ready);
        d_.call([this, id, r, ready] {
          if (r != 0)
            throw std::runtime_error("replay: waiting for claim " + std::to_string(id) + ": " +
                                     std::strerror(-r));
          if (ready == TEMPO_RETRIEVAL_READY)
            observer_->on_claim_ready(id);
          else
            observer_->on_claim_ordinary(id);
        });
      });
    return 0;
  }
  int begin_transfer(ClaimId id) override { return c_.transfer_begin(id); }
  int end_transfer(ClaimId id) override { return c_.transfer_end(id); }
  int query(ClaimId id, ClaimView* out) override {
    tempo_claim_info info{};
    if (const int r = c_.query(id, &info); r != 0) return r;
    *out = ClaimView{};
    out->id = id;
    out->state = static_cast<ClaimState>(info.state);
    out->error = info.error;
    out->bytes = info.bytes;
    out->deferrals = info.deferrals;
    out->ttu = info.ttu_ns;
    if (info.ttr_ns != TEMPO_TTR_NONE) out->ttr = info.ttr_ns;
    if (info.laxity_ns != TEMPO_LAXITY_NONE) out->laxity = info.laxity_ns;
    out->resident_bytes = info.resident_bytes;
    out->timing = {info.reported_ns,       info.committed_ns,
                   info.ready_ns,          info.retrieval_requested_ns,
                   info.transfer_begin_ns, info.ended_ns};
    return 0;
  }
  int ordinary_read(ClaimId id, std::function<void(int)> done) override {
    pool_.post([this, id, done = std::move(done)] {
      const int r = c_.ordinary_read(id);
      d_.call([&] { done(r); });
    });
    return 0;
  }

 private:
  DaemonClient& c_;
  Driver& d_;
  StackObserver* observer_ = nullptr;  // the driver's thread
  CallPool pool_;                      // last: its threads stop before the rest goes
};

// One engine process's side of tempod: its own threaded driver (the wall clock the engine
// times its GPU work on) and the daemon's claim surface; the stack itself is the daemon's.
class DaemonServingStack final : public ServingStack {
 public:
  // `client` outlives the stack; `waiters`: concurrent readiness waits and ordinary reads.
  DaemonServingStack(DaemonClient& client, uint32_t waiters) : client_(client) {
    std::string error;
    if (ThreadedDriver::create(&driver_, &error) != 0) throw std::runtime_error(error);
    claims_ = std::make_unique<DaemonClaims>(client, *driver_, waiters);
    driver_->start();
  }
  ~DaemonServingStack() override {
    claims_.reset();  // its waits end before the driver they call into stops
    driver_->stop();
  }

  Driver& driver() override { return *driver_; }
  Stack& stack() override {
    throw std::logic_error("an engine process has no stack of its own: tempod holds it");
  }
  ClaimSurface& claims() override { return *claims_; }
  // Puts the object into the daemon's store (STORE_PUT).
  int preload(const KvObject& object, std::string* error) override {
    std::vector<std::byte> data(object.bytes);
    fill_object_pattern(object.key, data);
    const int r = client_.store_put(object.key, data.data(), data.size());
    if (r != 0) *error = "tempod store put: " + std::string(std::strerror(-r));
    return r;
  }
  void run(const std::function<bool()>& done) override { driver_->wait_until(done, kNever); }
  // Reads the transferring claim's extents in place, from the daemon's fast tier as this
  // process mapped it.
  uint64_t copy_out(ClaimId claim) override {
    std::vector<tempo_extent> extents(TEMPOD_MAX_EXTENTS);
    size_t count = 0;
    if (client_.extents(claim, extents.data(), extents.size(), &count) != 0) return 0;
    uint64_t copied = 0;
    for (size_t i = 0; i < count; ++i) {
      if (sink_.size() < extents[i].bytes) sink_.resize(extents[i].bytes);
      std::memcpy(sink_.data(), extents[i].addr, extents[i].bytes);
      copied += extents[i].bytes;
    }
    return copied;
  }
  int read_dax_l1(std::span<const ObjectKey>, std::function<void(int)>) override {
    return -EOPNOTSUPP;  // dax-l1 reads the device without the controller: not through tempod
  }

 private:
  DaemonClient& client_;
  std::unique_ptr<ThreadedDriver> driver_;
  std::unique_ptr<DaemonClaims> claims_;
  std::vector<std::byte> sink_;  // the driver's thread
};

std::string errno_text(int e) { return std::strerror(e < 0 ? -e : e); }

// A directory of the run's own (configuration, socket, log, records), removed at the end.
class RunDir {
 public:
  RunDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string t = std::string(tmp && *tmp ? tmp : "/tmp") + "/tempo-replay-daemon-XXXXXX";
    if (mkdtemp(t.data()) == nullptr)
      throw std::runtime_error("cannot make a run directory " + t + ": " + errno_text(errno));
    path_ = t;
  }
  ~RunDir() {
    for (const std::string& f : files_) unlink((path_ + "/" + f).c_str());
    rmdir(path_.c_str());
  }
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;
  // The path of `name` inside, removed with the directory.
  std::string file(const std::string& name) {
    files_.push_back(name);
    return path_ + "/" + name;
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

std::string log_tail(const std::string& path) {
  std::ifstream f(path);
  std::deque<std::string> lines;
  for (std::string line; std::getline(f, line);) {
    lines.push_back(line);
    if (lines.size() > 5) lines.pop_front();
  }
  std::string out;
  for (const std::string& l : lines) out += "\n  " + l;
  return out;
}

std::string exit_text(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by ") + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// The daemon of one run: started on `conf`, stderr to `log`; serving once connect()
// succeeds; stopped with SIGTERM (it must exit 0).
class Tempod {
 public:
  Tempod(const std::string& binary, const std::string& conf, std::string log)
      : log_(std::move(log)) {
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("cannot fork tempod: " + errno_text(errno));
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // no daemon outlives a crashed replay
      const int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
      }
      execlp(binary.c_str(), "tempod", "--config", conf.c_str(), static_cast<char*>(nullptr));
      std::fprintf(stderr, "cannot run %s: %s\n", binary.c_str(), std::strerror(errno));
      _exit(127);
    }
  }
  ~Tempod() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Tempod(const Tempod&) = delete;
  Tempod& operator=(const Tempod&) = delete;

  // Connects as `engine` once the daemon serves `socket`.
  std::unique_ptr<DaemonClient> connect(const std::string& socket, const std::string& engine) {
    std::unique_ptr<DaemonClient> client;
    std::string error;
    for (int waited = 0; waited < kStartupMs; waited += 10) {
      if (DaemonClient::connect(socket, engine, &client, &error) == 0) return client;
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("tempod did not start (" + exit_text(status) +
                                 "):" + log_tail(log_));
      }
      usleep(10000);
    }
    throw std::runtime_error("tempod did not serve within " + std::to_string(kStartupMs / 1000) +
                             " s: " + error + log_tail(log_));
  }
  void stop() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      throw std::runtime_error("tempod stopped with " + exit_text(status) + ":" + log_tail(log_));
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
};

void write_all(int fd, const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("write: " + errno_text(errno));
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

// Reads exactly `bytes`; false at end of file first.
bool read_all(int fd, void* data, size_t bytes) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = read(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error("read: " + errno_text(errno));
    if (n == 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + errno_text(errno));
    r = fds[0];
    w = fds[1];
  }
  ~Pipe() {
    close_r();
    close_w();
  }
  void close_r() {
    if (r >= 0) close(r);
    r = -1;
  }
  void close_w() {
    if (w >= 0) close(w);
    w = -1;
  }
};

// What an engine process needs besides the workload: where its daemon is and how it talks
// to the parent (a byte on `ready` once connected; the start time read from `start`).
struct EngineProcess {
  uint32_t index = 0;
  std::span<const size_t> mine;
  std::string socket;
  std::string records;  // the file its records go to
};

// The body of engine process `p`; never returns.
[[noreturn]] void engine_main(const EngineProcess& p, const ReplayWorkload& w,
                              const EngineConfig& cfg, const StepCosts& costs, Pipe& ready,
                              Pipe& start) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  ready.close_r();
  start.close_w();
  int status = 0;
  try {
    std::unique_ptr<DaemonClient> client;
    std::string error;
    if (DaemonClient::connect(p.socket, "engine-" + std::to_string(p.index), &client, &error) != 0)
      throw std::runtime_error(error);
    EngineRun run;
    {
      DaemonServingStack st(*client, cfg.max_active);
      write_all(ready.w, "r", 1);
      TimeNs at = 0;
      if (!read_all(start.r, &at, sizeof(at))) throw std::runtime_error("the run was called off");
      run = serve_engine(w, p.mine, p.index, st, cfg, costs, at);
    }
    std::ofstream out(p.records, std::ios::binary);
    const uint64_t head[2] = {run.requests.size(), run.copied_bytes};
    out.write(reinterpret_cast<const char*>(head), sizeof(head));
    out.write(reinterpret_cast<const char*>(run.requests.data()),
              static_cast<std::streamsize>(run.requests.size() * sizeof(RequestRecord)));
    if (!out.flush()) throw std::runtime_error("cannot write " + p.records);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tempo-replay: engine %u: %s\n", p.index, e.what());
    status = 1;
  }
  _exit(status);
}

// The engine processes of a run: killed if the run fails before they end.
class EngineProcesses {
 public:
  ~EngineProcesses() {
    for (const pid_t pid : pids_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
  void add(pid_t pid) { pids_.push_back(pid); }
  // Waits for every one; the first failure as "engine g: why".
  void wait_all() {
    std::string failed;
    for (size_t g = 0; g < pids_.size(); ++g) {
      int status = 0;
      waitpid(pids_[g], &status, 0);
      if (failed.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        failed = "engine " + std::to_string(g) + " failed (" + exit_text(status) + ")";
    }
    pids_.clear();
    if (!failed.empty()) throw std::runtime_error(failed);
  }

 private:
  std::vector<pid_t> pids_;
};

// The workload's objects in the store, before the daemon (its one opener) starts.
void preload_store(const ReplayWorkload& w, const std::string& dir) {
  ObjectStoreOptions so;
  so.dir = dir;
  std::unique_ptr<ObjectStore> store;
  if (const int r = ObjectStore::open(so, &store); r != 0)
    throw std::runtime_error("cannot open the object store in " + dir + ": " + errno_text(r));
  std::string error;
  uint64_t written = 0;
  for (const KvObject& o : w.preloaded)
    if (preload_object(*store, o, &written, &error) != 0) throw std::runtime_error(error);
  if (const int r = store->sync(); r != 0)
    throw std::runtime_error("cannot sync the object store: " + errno_text(r));
}

}  // namespace

std::string default_tempod_path() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    std::string dir(self, static_cast<size_t>(n));
    dir.resize(dir.rfind('/'));
    for (const char* rel : {"/../tempod/tempod", "/../sbin/tempod", "/tempod"})
      if (access((dir + rel).c_str(), X_OK) == 0) return dir + rel;
  }
  return "tempod";
}

RunResult run_daemon_engines(const ReplayWorkload& w, const EngineConfig& cfg,
                             const StepCosts& costs, const DaemonRunOptions& o) {
  if (cfg.policy == "dax-l1")
    throw std::invalid_argument(
        "dax-l1 reads the device without the controller: it has no tempod form");
  if (o.engines == 0 || o.engines > kMaxDeploymentSize)
    throw std::invalid_argument("a daemon run has 1 to " + std::to_string(kMaxDeploymentSize) +
                                " engines");
  if (!parse_policy(cfg.policy)) throw std::invalid_argument("unknown policy '" + cfg.policy + "'");
  const std::string& policy = cfg.policy;
  preload_store(w, o.store_dir);
  RunDir dir;
  const std::string socket = dir.file("tempod.sock"), conf = dir.file("tempod.conf");
  {
    std::ofstream f(conf);
    f << "device = uring\nfast_tier_bytes = " << o.fast_tier_bytes
      << "\nbudget_bytes = " << o.budget_bytes << "\npolicy = " << policy
      << "\ncalibration_rate = " << static_cast<uint64_t>(o.calibration_rate_bps)
      << "\nstatic_rate = " << static_cast<uint64_t>(o.calibration_rate_bps)
      << "\ndaemon.socket = " << socket << "\n[uring]\nstore_path = " << o.store_dir
      << "\nhuge_pages = false\nprefault = false\n";
    if (!f.flush()) throw std::runtime_error("cannot write " + conf);
  }
  Tempod daemon(o.tempod.empty() ? default_tempod_path() : o.tempod, conf, dir.file("tempod.log"));
  std::unique_ptr<DaemonClient> monitor = daemon.connect(socket, "tempo-replay");

  const std::vector<uint32_t> engine_of = route(w, o.engines, o.router);
  std::vector<std::vector<size_t>> mine(o.engines);
  for (size_t i = 0; i < engine_of.size(); ++i) mine[engine_of[i]].push_back(i);
  std::vector<EngineProcess> procs(o.engines);
  Pipe ready, start;
  EngineProcesses children;
  for (uint32_t g = 0; g < o.engines; ++g) {
    procs[g] = {g, mine[g], socket, dir.file("engine-" + std::to_string(g) + ".rec")};
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("cannot fork an engine: " + errno_text(errno));
    if (pid == 0) engine_main(procs[g], w, cfg, costs, ready, start);
    children.add(pid);
  }
  ready.close_w();
  start.close_r();
  // Every engine connected (or gone: its end of the pipe closes) before the clock starts.
  for (uint32_t g = 0; g < o.engines; ++g) {
    pollfd p{ready.r, POLLIN, 0};
    char byte = 0;
    if (poll(&p, 1, kStartupMs) != 1 || !read_all(ready.r, &byte, 1)) {
      start.close_w();  // the others are called off
      children.wait_all();
      throw std::runtime_error("the engine processes did not connect to tempod");
    }
  }
  const TimeNs at = MonotonicClock().now() + kStartLead;
  for (uint32_t g = 0; g < o.engines; ++g) write_all(start.w, &at, sizeof(at));
  children.wait_all();

  RunResult r;
  r.policy = cfg.policy;
  r.requests.resize(w.requests.size());
  for (const EngineProcess& p : procs) {
    std::ifstream in(p.records, std::ios::binary);
    uint64_t head[2] = {};
    in.read(reinterpret_cast<char*>(head), sizeof(head));
    std::vector<RequestRecord> recs(head[0] == p.mine.size() ? head[0] : 0);
    in.read(reinterpret_cast<char*>(recs.data()),
            static_cast<std::streamsize>(recs.size() * sizeof(RequestRecord)));
    if (!in || recs.size() != p.mine.size())
      throw std::runtime_error("engine " + std::to_string(p.index) + " left no complete records");
    for (size_t k = 0; k < recs.size(); ++k) r.requests[p.mine[k]] = recs[k];
    r.copied_bytes += head[1];
  }
  tempo_counters c{};
  if (const int e = monitor->stats(&c); e != 0)
    throw std::runtime_error("tempod stats: " + errno_text(e));
  if (c.ledger_bytes != 0 || c.pinned_bytes != 0)
    throw std::logic_error("replay: protection leaked past the run (tempod's ledger " +
                           std::to_string(c.ledger_bytes) + " bytes, " +
                           std::to_string(c.pinned_bytes) + " pinned)");
  monitor.reset();
  daemon.stop();
  // The device's rate decides the regime (a sim replay at the same --staging-rate is the
  // in-process counterpart).
  std::fprintf(stderr,
               "tempo-replay: %s: tempod's learned staging rate %.3f GiB/s, %.2f GiB/s of the "
               "model's bytes\n",
               cfg.policy.c_str(), c.effective_rate_bps / kGiB,
               c.effective_rate_bps / kGiB * static_cast<double>(cfg.byte_scale));
  // In the model's bytes: the daemon's device ran at 1/byte_scale of them.
  const double scale = static_cast<double>(cfg.byte_scale);
  r.ledger_byte_seconds = c.protected_gib_seconds * kGiB * scale;
  r.capacity_deferrals = c.capacity_deferral_attempts;
  r.deferred_claims = c.capacity_deferrals;
  r.ordinary_claims = c.claims_ordinary;
  r.staged_bytes = c.staged_bytes * cfg.byte_scale;
  r.demand_bytes = c.demand_bytes * cfg.byte_scale;
  for (const RequestRecord& q : r.requests) r.end_time = std::max(r.end_time, q.timing.finish);
  summarize_run(&r, o.engines, o.engines);
  return r;
}

}  // namespace tempo
