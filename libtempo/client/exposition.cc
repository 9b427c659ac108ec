#include "client/exposition.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <tuple>
#include <vector>

namespace tempo {
namespace {

using nlohmann::json;

// The protocol's commit margin buckets are the controller's.
constexpr int64_t kMarginBoundsMs[] = TEMPOD_MARGIN_BOUNDS_MS;
static_assert(std::size(kMarginBoundsMs) == kCommitMarginBoundsNs.size());
static_assert(std::size(kMarginBoundsMs) + 1 == TEMPOD_MARGIN_BUCKETS);
constexpr bool same_margin_bounds() {
  for (size_t i = 0; i < kCommitMarginBoundsNs.size(); ++i)
    if (kMarginBoundsMs[i] * kNsPerMs != kCommitMarginBoundsNs[i]) return false;
  return true;
}
static_assert(same_margin_bounds());
static_assert(TEMPOD_MARGIN_BUCKETS ==
              std::tuple_size_v<decltype(ControllerStats::margin_buckets)>);

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
    TEMPO_METRIC("tempo_capacity_deferrals_total", true, deferred_claims,
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

}  // namespace

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

json prometheus_doc(const tempo_counters& s, const tempod_timeliness& t) {
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
  return doc;
}

void to_timeliness(const ControllerStats& c, tempod_timeliness* t) {
  t->on_time = c.on_time;
  t->late = c.late;
  t->margin_count = c.committed;
  t->margin_sum_ns = c.margin_sum_ns;
  std::copy(c.margin_buckets.begin(), c.margin_buckets.end(), t->margin_buckets);
}

json counters_doc(const std::string& device, const tempo_counters& s, const tempod_timeliness& t) {
  return json{{"device", device},
              {"now_ns", s.now_ns},
              {"budget_bytes", s.budget_bytes},
              {"ledger_bytes", s.ledger_bytes},
              {"reserved_bytes", s.reserved_bytes},
              {"claims_reported", s.claims_reported},
              {"claims_committed", s.claims_committed},
              {"capacity_deferrals", s.deferred_claims},
              {"capacity_deferral_attempts", s.capacity_deferral_attempts},
              {"claims_ordinary", s.claims_ordinary},
              {"claims_failed_over", s.claims_failed_over},
              {"claims_cancelled", s.claims_cancelled},
              {"claims_released", s.claims_released},
              {"claims_failed", s.claims_failed},
              {"claims_planned", s.claims_planned},
              {"claims_live", s.claims_live},
              {"stage_ops", s.stage_ops},
              {"staged_bytes", s.staged_bytes},
              {"stage_errors", s.stage_errors},
              {"outstanding_ops", s.outstanding_ops},
              {"fast_tier_capacity_bytes", s.fast_tier_capacity_bytes},
              {"fast_tier_used_bytes", s.fast_tier_used_bytes},
              {"pinned_bytes", s.pinned_bytes},
              {"evictions", s.evictions},
              {"demand_bytes", s.demand_bytes},
              {"effective_rate_bps", s.effective_rate_bps},
              {"protected_gib_seconds", s.protected_gib_seconds},
              {"retrievals_on_time", t.on_time},
              {"retrievals_late", t.late},
              {"commit_margin_sum_ns", t.margin_sum_ns},
              {"commit_margin_buckets",
               std::vector<uint64_t>(std::begin(t.margin_buckets), std::end(t.margin_buckets))}};
}

}  // namespace tempo
