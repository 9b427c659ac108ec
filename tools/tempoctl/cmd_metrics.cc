// tempoctl metrics and claims --daemon: what a tempod serves to operators.
//
// tempoctl metrics: a tempod's counters as a Prometheus text exposition (version 0.0.4),
// for a node-exporter textfile (`tempoctl metrics > /var/lib/node_exporter/tempo.prom`) or
// a scrape wrapper. Counters end in _total; the rest are gauges.
#include <cstdio>
#include <cstring>
#include <iterator>

#include "cli.h"
#include "client/daemon_client.h"
#include "client/tempod_proto.h"
#include "controller/claim.h"

namespace tempo::ctl {
namespace {

struct Metric {
  const char* name;
  bool counter;
  const char* help;
  double (*value)(const tempo_counters& s);
};

#define TEMPO_METRIC(name, counter, field, help)                                              \
  {                                                                                           \
    name, counter, help, [](const tempo_counters& s) { return static_cast<double>(s.field); } \
  }

const Metric kMetrics[] = {
    TEMPO_METRIC("tempo_claims_reported_total", true, claims_reported,
                 "Claims reported (prefix-cache hits on reusable KV)"),
    TEMPO_METRIC("tempo_claims_committed_total", true, claims_committed,
                 "Claims committed (protected capacity reserved, staging started)"),
    TEMPO_METRIC("tempo_claims_released_total", true, claims_released,
                 "Claims released after their transfer"),
    TEMPO_METRIC("tempo_claims_cancelled_total", true, claims_cancelled, "Claims cancelled"),
    TEMPO_METRIC("tempo_claims_ordinary_total", true, claims_ordinary,
                 "Claims that took the ordinary (demand) path"),
    TEMPO_METRIC("tempo_claims_failed_over_total", true, claims_failed_over,
                 "Committed claims whose staging failed over to the ordinary path"),
    TEMPO_METRIC("tempo_claims_failed_total", true, claims_failed, "Claims failed"),
    TEMPO_METRIC("tempo_capacity_deferrals_total", true, capacity_deferrals,
                 "Claims whose commit was refused for lack of protected capacity"),
    TEMPO_METRIC("tempo_capacity_deferral_attempts_total", true, capacity_deferral_attempts,
                 "Commit attempts refused for lack of protected capacity"),
    TEMPO_METRIC("tempo_stage_ops_total", true, stage_ops, "Staging operations completed"),
    TEMPO_METRIC("tempo_staged_bytes_total", true, staged_bytes, "Bytes staged into the fast tier"),
    TEMPO_METRIC("tempo_stage_errors_total", true, stage_errors, "Staging operations failed"),
    TEMPO_METRIC("tempo_demand_bytes_total", true, demand_bytes, "Bytes read on the ordinary path"),
    TEMPO_METRIC("tempo_evictions_total", true, evictions, "Unprotected fast-tier evictions"),
    TEMPO_METRIC("tempo_protected_gib_seconds_total", true, protected_gib_seconds,
                 "Integral of protected capacity over time (GiB x s)"),
    TEMPO_METRIC("tempo_protected_bytes", false, ledger_bytes,
                 "Protected capacity in use: protected plus reserved bytes"),
    TEMPO_METRIC("tempo_reserved_bytes", false, reserved_bytes,
                 "Part of the protected capacity still staging"),
    TEMPO_METRIC("tempo_budget_bytes", false, budget_bytes, "Protected-capacity budget"),
    TEMPO_METRIC("tempo_claims_live", false, claims_live, "Live claims"),
    TEMPO_METRIC("tempo_claims_planned", false, claims_planned, "Claims planned, not committed"),
    TEMPO_METRIC("tempo_stage_outstanding_ops", false, outstanding_ops,
                 "Staging operations in flight"),
    TEMPO_METRIC("tempo_fast_tier_capacity_bytes", false, fast_tier_capacity_bytes,
                 "Fast-tier capacity"),
    TEMPO_METRIC("tempo_fast_tier_used_bytes", false, fast_tier_used_bytes,
                 "Fast-tier bytes resident"),
    TEMPO_METRIC("tempo_pinned_bytes", false, pinned_bytes, "Fast-tier bytes pinned"),
    TEMPO_METRIC("tempo_staging_rate_bytes_per_second", false, effective_rate_bps,
                 "Learned effective staging rate"),
};

#undef TEMPO_METRIC

constexpr int64_t kMarginBoundsMs[] = TEMPOD_MARGIN_BOUNDS_MS;
static_assert(std::size(kMarginBoundsMs) + 1 == TEMPOD_MARGIN_BUCKETS);

std::string prometheus_text(const tempo_counters& s, const tempod_timeliness& t) {
  std::string out;
  char line[160];
  auto metric = [&](const char* name, const char* type, const char* help, double v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    std::snprintf(line, sizeof(line), "%s %.17g\n", name, v);
    out += line;
  };
  for (const Metric& m : kMetrics)
    metric(m.name, m.counter ? "counter" : "gauge", m.help, m.value(s));
  metric("tempo_retrievals_on_time_total", "counter",
         "Retrievals of committed claims that found them stage-ready", double(t.on_time));
  metric("tempo_retrievals_late_total", "counter",
         "Retrievals of committed claims that found them still staging", double(t.late));
  // The commit margin (TTU - TTR at commit) as a Prometheus histogram, in seconds.
  const char* h = "tempo_commit_margin_seconds";
  out += std::string("# HELP ") + h + " Commit margin: TTU - TTR when a claim committed\n" +
         "# TYPE " + h + " histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < TEMPOD_MARGIN_BUCKETS; ++i) {
    cumulative += t.margin_buckets[i];
    if (i < std::size(kMarginBoundsMs))
      std::snprintf(line, sizeof(line), "%s_bucket{le=\"%g\"} %llu\n", h,
                    double(kMarginBoundsMs[i]) / 1e3, static_cast<unsigned long long>(cumulative));
    else
      std::snprintf(line, sizeof(line), "%s_bucket{le=\"+Inf\"} %llu\n", h,
                    static_cast<unsigned long long>(cumulative));
    out += line;
  }
  std::snprintf(line, sizeof(line), "%s_sum %.17g\n%s_count %llu\n", h,
                double(t.margin_sum_ns) / 1e9, h, static_cast<unsigned long long>(t.margin_count));
  out += line;
  return out;
}

}  // namespace

// A tempod's claims, page by page, with the engine each belongs to.
int daemon_claims(const Args& args) {
  std::unique_ptr<DaemonClient> client;
  std::string error;
  if (DaemonClient::connect(args.get("daemon"), "tempoctl", &client, &error) != 0)
    return fail("claims", error);
  json claims = json::array();
  std::vector<DaemonClient::ClaimEntry> page;
  for (tempo_claim_id after = 0;;) {
    if (const int r = client->claims(after, TEMPOD_MAX_CLAIMS, &page); r != 0)
      return fail("claims", std::string("claims: ") + std::strerror(-r));
    for (const DaemonClient::ClaimEntry& e : page) {
      if (e.id <= after) return fail("claims", "claim ids from tempod do not grow");
      after = e.id;
      const tempo_claim_info& i = e.info;
      const bool planned = i.laxity_ns != TEMPO_LAXITY_NONE;
      auto when = [](int64_t ns) { return ns >= 0 ? json(ns) : json(nullptr); };
      claims.push_back(
          json{{"id", e.id},
               {"state", std::string(claim_state_name(static_cast<ClaimState>(i.state)))},
               {"bytes", i.bytes},
               {"ttu_ns", i.ttu_ns},
               {"ttr_ns", planned ? json(i.ttu_ns - i.laxity_ns) : json(nullptr)},
               {"laxity_ns", planned ? json(i.laxity_ns) : json(nullptr)},
               {"deferrals", i.deferrals},
               {"cancel_pending", (i.flags & TEMPO_CLAIM_F_CANCEL_PENDING) != 0},
               {"never_fits", (i.flags & TEMPO_CLAIM_F_NEVER_FITS) != 0},
               {"error", i.error},
               {"engine", e.engine},
               {"client", e.client},
               {"request", e.request},
               {"reported_ns", i.reported_ns},
               {"committed_ns", when(i.committed_ns)},
               {"ready_ns", when(i.ready_ns)},
               {"retrieval_requested_ns", when(i.retrieval_requested_ns)},
               {"transfer_begin_ns", when(i.transfer_begin_ns)},
               {"ended_ns", when(i.ended_ns)}});
    }
    if (page.size() < TEMPOD_MAX_CLAIMS) break;
  }
  return print_claims(args, claims);
}

int cmd_metrics(const Args& args) {
  const std::string socket = args.get("daemon", "/run/tempo/tempod.sock");
  std::unique_ptr<DaemonClient> client;
  std::string error;
  if (DaemonClient::connect(socket, "tempoctl", &client, &error) != 0)
    return fail("metrics", error);
  tempo_counters s{};
  tempod_timeliness t{};
  if (const int r = client->stats(&s); r != 0)
    return fail("metrics", std::string("stats: ") + std::strerror(-r));
  if (const int r = client->timeliness(&t); r != 0)
    return fail("metrics", std::string("timeliness: ") + std::strerror(-r));
  if (args.has("json")) {
    json doc = json::object();
    for (const Metric& m : kMetrics) doc[m.name] = m.value(s);
    doc["tempo_retrievals_on_time_total"] = t.on_time;
    doc["tempo_retrievals_late_total"] = t.late;
    json buckets = json::array();
    for (size_t i = 0; i < TEMPOD_MARGIN_BUCKETS; ++i)
      buckets.push_back(
          {{"le_ms", i < std::size(kMarginBoundsMs) ? json(kMarginBoundsMs[i]) : json("+Inf")},
           {"count", t.margin_buckets[i]}});
    doc["tempo_commit_margin"] = {
        {"count", t.margin_count}, {"sum_ns", t.margin_sum_ns}, {"buckets", buckets}};
    print_json(doc);
    return 0;
  }
  std::fputs(prometheus_text(s, t).c_str(), stdout);
  return 0;
}

}  // namespace tempo::ctl
