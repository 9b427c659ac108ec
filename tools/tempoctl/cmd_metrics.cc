// tempoctl metrics: a tempod's counters as a Prometheus text exposition (version 0.0.4),
// for a node-exporter textfile (`tempoctl metrics > /var/lib/node_exporter/tempo.prom`) or
// a scrape wrapper. Counters end in _total; the rest are gauges.
#include <cstdio>
#include <cstring>

#include "cli.h"
#include "client/daemon_client.h"

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

std::string prometheus_text(const tempo_counters& s) {
  std::string out;
  char line[160];
  for (const Metric& m : kMetrics) {
    out += std::string("# HELP ") + m.name + " " + m.help + "\n# TYPE " + m.name +
           (m.counter ? " counter\n" : " gauge\n");
    std::snprintf(line, sizeof(line), "%s %.17g\n", m.name, m.value(s));
    out += line;
  }
  return out;
}

}  // namespace

int cmd_metrics(const Args& args) {
  const std::string socket = args.get("daemon", "/run/tempo/tempod.sock");
  std::unique_ptr<DaemonClient> client;
  std::string error;
  if (DaemonClient::connect(socket, "tempoctl", &client, &error) != 0)
    return fail("metrics", error);
  tempo_counters s{};
  if (const int r = client->stats(&s); r != 0)
    return fail("metrics", std::string("stats: ") + std::strerror(-r));
  if (args.json()) {
    json doc = json::object();
    for (const Metric& m : kMetrics) doc[m.name] = m.value(s);
    print_json(doc);
    return 0;
  }
  std::fputs(prometheus_text(s).c_str(), stdout);
  return 0;
}

}  // namespace tempo::ctl
