#include "serving_engine.h"

#include <algorithm>
#include <cerrno>
#include <deque>
#include <functional>
#include <memory>
#include <queue>
#include <span>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "keys/chain_hash.h"
#include "replay_engine.h"
#include "router.h"
#include "serving_stack.h"

namespace tempo {

namespace {

// The engines of one host around its stack: the stack's observer (each engine ignores the
// claims of the others) and its engines' waiting queues, given to the controller together
// (Controller::update_orders, as tempod gives its engines'): queue-K commits each engine's
// first K, and a claim's requests behind it are its own engine's.
class Host final : public StackObserver {
 public:
  explicit Host(ServingStack& st) : st_(st) {}
  ServingStack& stack() { return st_; }

  void add(ReplayEngine* e) {
    engines_.push_back(e);
    orders_.emplace_back();
  }
  OrderSink sink(size_t local) {
    return [this, local](std::vector<ClaimId> order) {
      orders_[local] = std::move(order);
      publish();
    };
  }

  void on_claim_ready(ClaimId id) override {
    for (ReplayEngine* e : engines_) e->on_claim_ready(id);
  }
  void on_claim_ordinary(ClaimId id) override {
    for (ReplayEngine* e : engines_) e->on_claim_ordinary(id);
  }
  void on_claim_progress(ClaimId id) override {
    for (ReplayEngine* e : engines_) e->on_claim_progress(id);
  }

 private:
  void publish() {
    views_.assign(orders_.begin(), orders_.end());
    st_.claims().update_orders(views_);
  }

  ServingStack& st_;
  std::vector<ReplayEngine*> engines_;
  std::vector<std::vector<ClaimId>> orders_;  // per engine of this host
  std::vector<std::span<const ClaimId>> views_;
};

// Every engine of every host in one run on the hosts' shared driver.
// Places the workload's objects before the run. One host holds them all. Across hosts, each
// object starts on the host of the first request that reuses it (its "home", as if that host
// had computed it earlier) and in the pool, if there is one; a trace's objects, computed by
// its own earlier requests, start nowhere: a request saves what it computed.
// Layer-wise (`groups` > 0, one host), each object is stored as its layer groups' objects.
void place_objects(const ReplayWorkload& w, std::span<ServingStack* const> stacks,
                   const std::vector<uint32_t>& host_of, ClusterPool* pool, uint32_t groups) {
  std::string error;
  auto put = [&](ServingStack& st, const KvObject& o) {
    if (st.preload(o, &error) != 0) throw std::invalid_argument("preload: " + error);
  };
  if (stacks.size() == 1) {
    for (const KvObject& o : w.preloaded) {
      if (groups > 0) {
        for (const KvObject& part : layer_group_objects(o, groups)) put(*stacks[0], part);
        continue;
      }
      put(*stacks[0], o);
      if (pool) pool->preload(o);
    }
    return;
  }
  if (w.computed_in_run) return;
  std::unordered_map<ObjectKey, uint32_t> home;
  for (size_t i = 0; i < w.requests.size(); ++i)
    for (const KvObject& o : w.requests[i].prefix_chunks) home.try_emplace(o.key, host_of[i]);
  for (const KvObject& o : w.preloaded) {
    auto it = home.find(o.key);
    put(*stacks[it == home.end() ? 0 : it->second], o);
    if (pool) pool->preload(o);
  }
}

// The commits of the claims from `source` (SourceCommits).
SourceCommits commits_of(const std::vector<RequestRecord>& records, Source source) {
  SourceCommits c;
  std::vector<TimeNs> leads;
  for (const RequestRecord& q : records) {
    const Source s = q.pool_bytes > 0 ? Source::kRemote : Source::kLocal;
    if (q.claim.reported < 0 || s != source) continue;
    ++c.claims;
    if (q.claim.committed < 0) continue;
    ++c.committed;
    const TimeNs used = q.claim.retrieval_requested;
    if (used < 0) continue;
    leads.push_back(used - q.claim.committed);
    if (q.claim.ready >= 0 && q.claim.ready <= used)
      ++c.on_time;
    else
      ++c.late;
  }
  if (leads.empty()) return c;
  double sum = 0;
  for (TimeNs l : leads) sum += ns_to_sec(l);
  c.mean_lead_s = sum / double(leads.size());
  std::sort(leads.begin(), leads.end());
  const size_t mid = leads.size() / 2;
  c.median_lead_s = leads.size() % 2 ? ns_to_sec(leads[mid])
                                     : (ns_to_sec(leads[mid - 1]) + ns_to_sec(leads[mid])) / 2;
  return c;
}

RunResult serve_fleet(const ReplayWorkload& w, std::span<ServingStack* const> stacks,
                      const EngineConfig& cfg, const Deployment& d, const StepCosts& costs,
                      ClusterPool* pool) {
  if (d.hosts == 0 || d.engines_per_host == 0 || d.hosts > kMaxDeploymentSize ||
      d.engines_per_host > kMaxDeploymentSize || stacks.size() != d.hosts)
    throw std::invalid_argument("a deployment has 1 to " + std::to_string(kMaxDeploymentSize) +
                                " hosts of 1 to " + std::to_string(kMaxDeploymentSize) +
                                " engines");
  const uint32_t engines = d.hosts * d.engines_per_host;
  const std::vector<uint32_t> engine_of = route(w, engines, d.router);
  std::vector<uint32_t> host_of(engine_of.size());
  for (size_t i = 0; i < engine_of.size(); ++i) host_of[i] = engine_of[i] / d.engines_per_host;
  const bool layered = cfg.layer_wise != LayerWise::kOff;
  if (layered && (d.hosts > 1 || pool))
    throw std::invalid_argument("layer-wise loading is modelled on one host without a pool");
  place_objects(w, stacks, host_of, pool, layered ? cfg.layer_groups : 0);
  std::unordered_set<ObjectKey> reusable;
  if (d.hosts > 1)
    for (const KvObject& o : w.preloaded) reusable.insert(o.key);
  std::vector<std::vector<size_t>> mine(engines);
  for (size_t i = 0; i < engine_of.size(); ++i) mine[engine_of[i]].push_back(i);
  std::vector<std::unique_ptr<Host>> hosts;
  for (ServingStack* st : stacks) hosts.push_back(std::make_unique<Host>(*st));
  std::vector<std::unique_ptr<ReplayEngine>> fleet;
  for (uint32_t g = 0; g < engines; ++g) {
    Host& h = *hosts[g / d.engines_per_host];
    fleet.push_back(std::make_unique<ReplayEngine>(w, mine[g], g, h.stack(), cfg, costs,
                                                   h.sink(g % d.engines_per_host),
                                                   d.hosts > 1 ? &reusable : nullptr));
    h.add(fleet.back().get());
  }
  Driver& driver = stacks[0]->driver();
  // Arrivals are relative to the start of the run; records are reported relative to it.
  TimeNs start = 0;
  driver.call([&] {
    for (auto& h : hosts) h->stack().claims().observe(h.get(), driver);
    start = driver.now();
    std::vector<size_t> next(engines, 0);
    for (const uint32_t g : engine_of) fleet[g]->schedule_arrival(next[g]++, start);
  });
  stacks[0]->run([&] {
    return std::all_of(fleet.begin(), fleet.end(), [](const auto& e) { return e->done(); });
  });
  RunResult r;
  r.policy = cfg.policy;
  r.requests.resize(w.requests.size());
  driver.call([&] {
    for (auto& h : hosts) h->stack().claims().observe(nullptr, driver);
    for (auto& e : fleet) {
      e->collect(start, &r.requests);
      r.copied_bytes += e->copied_bytes();
    }
    // In the model's bytes on every device: a real device ran at 1/byte_scale of them.
    for (auto& h : hosts) {
      const StackStats stats = h->stack().stack().stats();
      if (stats.provider.ledger_bytes != 0 || stats.device_stats.pins != 0)
        throw std::logic_error("replay: protection leaked past the run");
      r.ledger_byte_seconds += stats.provider.ledger_byte_seconds * double(cfg.byte_scale);
      r.capacity_deferrals += stats.controller.capacity_deferrals;
      r.deferred_claims += stats.controller.deferred_claims;
      r.ordinary_claims += stats.controller.ordinary;
      r.staged_bytes += stats.provider.staged_bytes * cfg.byte_scale;
      r.demand_bytes += stats.device_stats.demand_bytes * cfg.byte_scale;
    }
    r.end_time = driver.now() - start;
    if (pool) r.pool_written_bytes = pool->written_bytes();
  });
  summarize_run(&r, engines, d.engines_per_host);
  return r;
}

}  // namespace

void summarize_run(RunResult* r, uint32_t engines, uint32_t engines_per_host) {
  std::vector<RequestTiming> timings;
  std::vector<std::vector<RequestTiming>> per_engine(engines);
  for (RequestRecord& q : r->requests) {
    q.host = q.engine / engines_per_host;
    r->reusable_bytes += q.reusable_bytes;
    r->hit_bytes += q.kv_bytes;
    r->pool_hit_bytes += q.pool_bytes;
    if (q.path == RetrievalPath::kRejected) {
      ++r->rejected;
      continue;
    }
    timings.push_back(q.timing);
    per_engine[q.engine].push_back(q.timing);
  }
  r->summary = summarize(timings, r->ledger_byte_seconds);
  for (Source s : {Source::kLocal, Source::kRemote})
    r->commits[static_cast<size_t>(s)] = commits_of(r->requests, s);
  if (engines > 1)
    for (const auto& t : per_engine) r->engines.push_back(summarize(t, 0));
}

EngineRun serve_engine(const ReplayWorkload& w, std::span<const size_t> mine, uint32_t index,
                       ServingStack& stack, const EngineConfig& cfg, const StepCosts& costs,
                       TimeNs start) {
  Host host(stack);
  ReplayEngine engine(w, std::vector<size_t>(mine.begin(), mine.end()), index, stack, cfg, costs,
                      host.sink(0), nullptr);
  host.add(&engine);
  Driver& driver = stack.driver();
  driver.call([&] {
    stack.claims().observe(&host, driver);
    for (size_t k = 0; k < mine.size(); ++k) engine.schedule_arrival(k, start);
  });
  stack.run([&] { return engine.done(); });
  EngineRun out;
  std::vector<RequestRecord> all(w.requests.size());
  driver.call([&] {
    stack.claims().observe(nullptr, driver);
    engine.collect(start, &all);
    out.copied_bytes = engine.copied_bytes();
  });
  for (const size_t i : mine) out.requests.push_back(all[i]);
  return out;
}

std::string_view layer_wise_name(LayerWise mode) {
  switch (mode) {
    case LayerWise::kOff:
      return "off";
    case LayerWise::kWhole:
      return "whole";
    case LayerWise::kLead:
      return "lead";
    case LayerWise::kPerGroup:
      return "per-group";
  }
  return "off";
}

std::optional<LayerWise> parse_layer_wise(std::string_view name) {
  for (LayerWise m : {LayerWise::kOff, LayerWise::kWhole, LayerWise::kLead, LayerWise::kPerGroup})
    if (name == layer_wise_name(m)) return m;
  return std::nullopt;
}

std::vector<KvObject> layer_group_objects(const KvObject& chunk, uint32_t groups) {
  std::vector<KvObject> out;
  for (uint32_t g = 0; g < groups; ++g)
    out.push_back(
        {layer_group_key(chunk.key, g), chunk.bytes / groups + (g < chunk.bytes % groups)});
  return out;
}

RunResult run_serving(const ReplayWorkload& workload, ServingStack& stack,
                      const EngineConfig& engine, const StepCosts& costs,
                      const Deployment& deployment) {
  if (deployment.hosts != 1)
    throw std::invalid_argument("several hosts run on the sim device only");
  if (deployment.cluster.enabled)
    throw std::invalid_argument("the cluster tier is modelled on the sim device only");
  ServingStack* stacks[] = {&stack};
  return serve_fleet(workload, stacks, engine, deployment, costs, nullptr);
}

RunResult run_serving(const ReplayWorkload& workload, const SimStackConfig& stack,
                      const EngineConfig& engine, const StepCosts& costs,
                      const Interference& interference, const Deployment& deployment) {
  SimStackConfig s = stack;
  if (engine.policy != "dax-l1") {
    auto p = parse_policy(engine.policy);
    if (!p) throw std::invalid_argument("unknown policy '" + engine.policy + "'");
    s.controller.policy = *p;
  }
  const ClusterModel& cm = deployment.cluster;
  if (cm.enabled && (!(cm.rate_bps > 0) || cm.latency < 0 || cm.slots == 0))
    throw std::invalid_argument(
        "the cluster tier needs a positive rate, a latency >= 0 and at least one slot");
  VirtualDriver driver;
  std::unique_ptr<ClusterPool> pool;
  if (cm.enabled) {
    pool = std::make_unique<ClusterPool>(driver, cm);
    s.remote = pool_source(cm, *pool);
  }
  std::vector<std::unique_ptr<SimServingStack>> hosts;
  std::vector<ServingStack*> stacks;
  for (uint32_t h = 0; h < std::max(deployment.hosts, 1u); ++h) {
    hosts.push_back(std::make_unique<SimServingStack>(driver, s, pool.get()));
    if (hosts.back()->device().set_interference(interference) != 0)
      throw std::invalid_argument("interference: a start < 0 or a factor outside (0, 1]");
    stacks.push_back(hosts.back().get());
  }
  RunResult r = serve_fleet(workload, stacks, engine, deployment, costs, pool.get());
  for (const auto& h : hosts) r.pool_read_bytes += h->device().remote_read_bytes();
  return r;
}

}  // namespace tempo
