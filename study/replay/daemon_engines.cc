#include "daemon_engines.h"

#include <poll.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <type_traits>

#include "processes.h"
#include "serving_stack.h"
#include "stack/threaded_driver.h"
#include "store/object_store.h"
#include "surface/daemon_surface.h"

namespace tempo {

namespace {

constexpr double kGiB = 1ull << 30;
// From the last engine connected to the first arrival.
constexpr TimeNs kStartLead = 50 * kNsPerMs;

static_assert(std::is_trivially_copyable_v<RequestRecord>,
              "engine processes hand their records over as bytes");

// One engine process's side of tempod: its own threaded driver (the wall clock the engine
// times its GPU work on) and a claim surface on the daemon; the stack itself is the
// daemon's.
class DaemonServingStack final : public ServingStack {
 public:
  explicit DaemonServingStack(std::unique_ptr<ClaimSurface> claims) : claims_(std::move(claims)) {
    std::string error;
    if (ThreadedDriver::create(&driver_, &error) != 0) throw std::runtime_error(error);
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
    const int r = claims_->store_put(object.key, data);
    if (r != 0) *error = "tempod store put: " + errno_text(r);
    return r;
  }
  void run(const std::function<bool()>& done) override { driver_->wait_until(done, kNever); }
  // Reads the transferring claim's extents in place, from the daemon's fast tier as this
  // process mapped it.
  uint64_t copy_out(ClaimId claim) override {
    std::vector<tempo_extent> extents;
    if (claims_->extents(claim, &extents) != 0) return 0;
    uint64_t copied = 0;
    for (const tempo_extent& e : extents) {
      if (sink_.size() < e.bytes) sink_.resize(e.bytes);
      std::memcpy(sink_.data(), e.addr, e.bytes);
      copied += e.bytes;
    }
    return copied;
  }
  int read_dax_l1(std::span<const ObjectKey>, std::function<void(int)>) override {
    return -EOPNOTSUPP;  // dax-l1 reads the device without the controller: not through tempod
  }

 private:
  std::unique_ptr<ClaimSurface> claims_;
  std::unique_ptr<ThreadedDriver> driver_;
  std::vector<std::byte> sink_;  // the driver's thread
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
    std::unique_ptr<ClaimSurface> claims;
    std::string error;
    if (DaemonSurface::open(p.socket, "engine-" + std::to_string(p.index), &claims, &error) != 0)
      throw std::runtime_error(error);
    EngineRun run;
    {
      DaemonServingStack st(std::move(claims));
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
  const std::string tempod = o.tempod.empty() ? default_tempod_path() : o.tempod;
  // Before the store is written: a binary that is no tempod would waste gigabytes of it.
  check_tempod(tempod);
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
  Tempod daemon(tempod, conf, dir.file("tempod.log"));
  std::unique_ptr<ClaimSurface> monitor = daemon.connect(socket, "tempo-replay");

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
  r.deferred_claims = c.deferred_claims;
  r.ordinary_claims = c.claims_ordinary;
  r.staged_bytes = c.staged_bytes * cfg.byte_scale;
  r.demand_bytes = c.demand_bytes * cfg.byte_scale;
  for (const RequestRecord& q : r.requests) r.end_time = std::max(r.end_time, q.timing.finish);
  summarize_run(&r, o.engines, o.engines);
  return r;
}

}  // namespace tempo
