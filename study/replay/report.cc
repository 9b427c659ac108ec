#include "report.h"

#include <algorithm>
#include <cerrno>
#include <map>

#include "csv/csv_writer.h"

namespace tempo {

std::string exact_seconds(TimeNs t) {
  char buf[40];
  const TimeNs a = t < 0 ? -t : t;
  std::snprintf(buf, sizeof buf, "%s%lld.%09lld", t < 0 ? "-" : "",
                static_cast<long long>(a / kNsPerSec), static_cast<long long>(a % kNsPerSec));
  return buf;
}

const char* path_name(RetrievalPath p) {
  switch (p) {
    case RetrievalPath::kNone:
      return "none";
    case RetrievalPath::kStaged:
      return "staged";
    case RetrievalPath::kOrdinary:
      return "ordinary";
    case RetrievalPath::kRejected:
      return "rejected";
    case RetrievalPath::kDaxL1:
      return "dax-l1";
  }
  return "unknown";
}

namespace {

std::string label_key(const ExperimentRow& r) {
  std::string k;
  for (const auto& [name, value] : r.labels) k += name + "=" + value + ";";
  return k;
}

// The demand policy's run with the same labels, the baseline of the gains.
std::map<std::string, const ServingSummary*> demand_baselines(
    const std::vector<ExperimentRow>& rows) {
  std::map<std::string, const ServingSummary*> base;
  for (const ExperimentRow& r : rows)
    if (r.result.policy == "demand") base[label_key(r)] = &r.result.summary;
  return base;
}

double gain_pct(double ours, double base) { return base != 0 ? (ours - base) / base * 100 : 0; }
// The reduction of a lower-is-better figure, in percent (0, not -0, when equal).
double reduction_pct(double ours, double base) {
  return base != 0 ? (base - ours) / base * 100 : 0;
}

}  // namespace

void print_summary_table(std::FILE* out, const std::vector<ExperimentRow>& rows) {
  const auto base = demand_baselines(rows);
  std::fprintf(out, "%-13s %9s %10s %11s %12s %9s %10s %10s\n", "policy", "p95 TTFT", "mean TTFT",
               "throughput", "C", "deferred", "p95 gain", "tput gain");
  std::fprintf(out, "%-13s %9s %10s %11s %12s %9s %10s %10s\n", "", "(s)", "(s)", "(token/s)",
               "(GiB*s/req)", "(claims)", "vs demand", "vs demand");
  for (const ExperimentRow& r : rows) {
    const ServingSummary& s = r.result.summary;
    auto it = base.find(label_key(r));
    std::string p95 = "-", tput = "-";
    if (it != base.end()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%+.1f%%",
                    reduction_pct(s.p95_ttft_s, it->second->p95_ttft_s));
      p95 = buf;
      std::snprintf(buf, sizeof buf, "%+.1f%%",
                    gain_pct(s.throughput_tps, it->second->throughput_tps));
      tput = buf;
    }
    std::fprintf(out, "%-13s %9.3f %10.3f %11.1f %12.2f %9llu %10s %10s\n", r.result.policy.c_str(),
                 s.p95_ttft_s, s.mean_ttft_s, s.throughput_tps, s.c_gib_s_per_req,
                 static_cast<unsigned long long>(r.result.deferred_claims), p95.c_str(),
                 tput.c_str());
  }
  // Rejected requests are not in the figures: say so, or a run that served none reads as 0 s.
  // Once when every policy rejected the same, which is the rule (the workload decides).
  const auto same = [&](const ExperimentRow& r) {
    return r.result.rejected == rows.front().result.rejected &&
           r.result.requests.size() == rows.front().result.requests.size();
  };
  const bool once = !rows.empty() && std::all_of(rows.begin(), rows.end(), same);
  for (const ExperimentRow& r : rows) {
    if (r.result.rejected == 0) continue;
    std::fprintf(out,
                 "%s%s%llu of %zu requests rejected on arrival (prompt + output over the model's "
                 "context, or KV over the GPU's memory): not in the figures above\n",
                 once ? "" : r.result.policy.c_str(), once ? "" : ": ",
                 static_cast<unsigned long long>(r.result.rejected), r.result.requests.size());
    if (once) break;
  }
  for (const ExperimentRow& r : rows) {
    if (r.result.engines.empty()) continue;
    std::fprintf(out, "%-13s p95 TTFT per engine (s):", r.result.policy.c_str());
    for (const ServingSummary& e : r.result.engines) std::fprintf(out, " %.3f", e.p95_ttft_s);
    std::fprintf(out, "\n");
  }
}

void print_layer_wise_table(std::FILE* out, const std::vector<ExperimentRow>& rows) {
  auto label = [](const ExperimentRow& r, const char* key) {
    for (const auto& [k, v] : r.labels)
      if (k == key) return v;
    return std::string();
  };
  std::fprintf(out, "%-22s %5s %-10s %-13s %12s %9s %10s\n", "model", "ratio", "loading", "policy",
               "C", "p95 TTFT", "mean TTFT");
  std::fprintf(out, "%-22s %5s %-10s %-13s %12s %9s %10s\n", "", "(%)", "", "", "(GiB*s/req)",
               "(s)", "(s)");
  for (const ExperimentRow& r : rows) {
    const ServingSummary& s = r.result.summary;
    std::fprintf(out, "%-22s %5s %-10s %-13s %12.2f %9.3f %10.3f\n", label(r, "model").c_str(),
                 label(r, "ratio").c_str(), label(r, "layer_wise").c_str(), r.result.policy.c_str(),
                 s.c_gib_s_per_req, s.p95_ttft_s, s.mean_ttft_s);
  }
}

void print_cluster_table(std::FILE* out, const std::vector<ExperimentRow>& rows) {
  std::fprintf(out, "%-8s %-13s %9s %10s %12s %9s %11s %10s\n", "cluster", "policy", "p95 TTFT",
               "mean TTFT", "C", "hit rate", "cross-host", "pool read");
  std::fprintf(out, "%-8s %-13s %9s %10s %12s %9s %11s %10s\n", "", "", "(s)", "(s)", "(GiB*s/req)",
               "(bytes)", "(of hits)", "(GiB)");
  auto pct = [](uint64_t part, uint64_t whole) {
    return whole ? 100.0 * double(part) / double(whole) : 0.0;
  };
  for (const ExperimentRow& r : rows) {
    std::string tier;
    for (const auto& [name, value] : r.labels)
      if (name == "cluster") tier = value;
    const RunResult& x = r.result;
    std::fprintf(out, "%-8s %-13s %9.3f %10.3f %12.2f %8.1f%% %10.1f%% %10.2f\n", tier.c_str(),
                 x.policy.c_str(), x.summary.p95_ttft_s, x.summary.mean_ttft_s,
                 x.summary.c_gib_s_per_req, pct(x.hit_bytes, x.reusable_bytes),
                 pct(x.pool_hit_bytes, x.hit_bytes),
                 double(x.pool_read_bytes) / double(1ull << 30));
  }
  std::fprintf(
      out, "\nclaims by source: remote = found only in the pool at lookup; lead = commit to use\n");
  std::fprintf(out, "%-8s %-13s %-7s %7s %9s %8s %6s %10s %12s\n", "cluster", "policy", "source",
               "claims", "committed", "on time", "late", "mean lead", "median lead");
  for (const ExperimentRow& r : rows) {
    std::string tier;
    for (const auto& [name, value] : r.labels)
      if (name == "cluster") tier = value;
    for (Source src : {Source::kLocal, Source::kRemote}) {
      const SourceCommits& c = r.result.commits[static_cast<size_t>(src)];
      if (c.claims == 0) continue;
      std::fprintf(out, "%-8s %-13s %-7s %7llu %9llu %8llu %6llu %9.3fs %11.3fs\n", tier.c_str(),
                   r.result.policy.c_str(), src == Source::kRemote ? "remote" : "local",
                   static_cast<unsigned long long>(c.claims),
                   static_cast<unsigned long long>(c.committed),
                   static_cast<unsigned long long>(c.on_time),
                   static_cast<unsigned long long>(c.late), c.mean_lead_s, c.median_lead_s);
    }
  }
}

int write_summary_csv(const std::string& path, const std::vector<ExperimentRow>& rows) {
  CsvFile file(path);
  if (!file.is_open()) return -errno;
  CsvWriter& f = file.csv();
  const auto base = demand_baselines(rows);
  if (!rows.empty())
    for (const auto& [name, value] : rows.front().labels) f << name;
  for (const char* col : {"policy",
                          "completed",
                          "p95_ttft_s",
                          "mean_ttft_s",
                          "throughput_tps",
                          "c_gib_s_per_req",
                          "capacity_deferrals",
                          "deferred_claims",
                          "ordinary_claims",
                          "staged_gib",
                          "demand_gib",
                          "p95_ttft_reduction_pct",
                          "throughput_gain_pct",
                          "staged_bytes",
                          "demand_bytes",
                          "rejected",
                          "reusable_bytes",
                          "hit_bytes",
                          "pool_hit_bytes",
                          "pool_read_bytes",
                          "pool_written_bytes"})
    f << col;
  for (const char* src : {"local", "remote"})
    for (const char* col :
         {"claims", "committed", "on_time", "late", "lead_mean_s", "lead_median_s"})
      f << std::string(src) + "_" + col;
  f.end_row();
  for (const ExperimentRow& r : rows) {
    const ServingSummary& s = r.result.summary;
    for (const auto& [name, value] : r.labels) f << value;
    auto it = base.find(label_key(r));
    const double p95_red =
        it != base.end() ? reduction_pct(s.p95_ttft_s, it->second->p95_ttft_s) : 0;
    const double tput =
        it != base.end() ? gain_pct(s.throughput_tps, it->second->throughput_tps) : 0;
    f << r.result.policy << s.completed << s.p95_ttft_s << s.mean_ttft_s << s.throughput_tps
      << s.c_gib_s_per_req << r.result.capacity_deferrals << r.result.deferred_claims
      << r.result.ordinary_claims << double(r.result.staged_bytes) / double(1ull << 30)
      << double(r.result.demand_bytes) / double(1ull << 30) << p95_red << tput
      << r.result.staged_bytes << r.result.demand_bytes << r.result.rejected
      << r.result.reusable_bytes << r.result.hit_bytes << r.result.pool_hit_bytes
      << r.result.pool_read_bytes << r.result.pool_written_bytes;
    for (const SourceCommits& c : r.result.commits)
      f << c.claims << c.committed << c.on_time << c.late << c.mean_lead_s << c.median_lead_s;
    f.end_row();
  }
  return file.close();
}

int write_requests_csv(const std::string& path, const std::vector<ExperimentRow>& rows) {
  CsvFile file(path);
  if (!file.is_open()) return -errno;
  CsvWriter& f = file.csv();
  if (!rows.empty())
    for (const auto& [name, value] : rows.front().labels) f << name;
  for (const char* col :
       {"policy",        "request",        "arrival_s",      "ttft_s",     "finish_s",
        "output_tokens", "prompt_tokens",  "cached_tokens",  "kv_bytes",   "path",
        "admitted_s",    "kv_available_s", "committed_s",    "ready_s",    "deferrals",
        "engine",        "host",           "reusable_bytes", "pool_bytes", "retrieval_requested_s"})
    f << col;
  f.end_row();
  auto secs = [](TimeNs t) { return t < 0 ? std::string() : exact_seconds(t); };
  for (const ExperimentRow& r : rows) {
    for (const RequestRecord& q : r.result.requests) {
      for (const auto& [name, value] : r.labels) f << value;
      f << r.result.policy << q.id << secs(q.timing.arrival)
        << (q.timing.first_token < 0 ? std::string()
                                     : exact_seconds(q.timing.first_token - q.timing.arrival))
        << secs(q.timing.finish) << q.timing.output_tokens << q.prompt_tokens << q.cached_tokens
        << q.kv_bytes << path_name(q.path) << secs(q.admitted) << secs(q.kv_available)
        << secs(q.claim.committed) << secs(q.claim.ready) << q.deferrals << q.engine << q.host
        << q.reusable_bytes << q.pool_bytes << secs(q.claim.retrieval_requested);
      f.end_row();
    }
  }
  return file.close();
}

int write_engines_csv(const std::string& path, const std::vector<ExperimentRow>& rows) {
  if (std::none_of(rows.begin(), rows.end(),
                   [](const ExperimentRow& r) { return !r.result.engines.empty(); }))
    return 0;
  CsvFile file(path);
  if (!file.is_open()) return -errno;
  CsvWriter& f = file.csv();
  for (const auto& [name, value] : rows.front().labels) f << name;
  for (const char* col :
       {"policy", "engine", "completed", "p95_ttft_s", "mean_ttft_s", "throughput_tps"})
    f << col;
  f.end_row();
  for (const ExperimentRow& r : rows) {
    for (size_t e = 0; e < r.result.engines.size(); ++e) {
      const ServingSummary& s = r.result.engines[e];
      for (const auto& [name, value] : r.labels) f << value;
      f << r.result.policy << e << s.completed << s.p95_ttft_s << s.mean_ttft_s << s.throughput_tps;
      f.end_row();
    }
  }
  return file.close();
}

void Progress::step(const std::string& label) {
  ++done_;
  if (!enabled_) return;
  constexpr size_t kWidth = 30;
  const size_t filled = total_ ? done_ * kWidth / total_ : kWidth;
  std::fprintf(stderr, "\r[%s%s] %zu/%zu %-40.40s", std::string(filled, '#').c_str(),
               std::string(kWidth - filled, '.').c_str(), done_, total_, label.c_str());
  std::fflush(stderr);
}

void Progress::finish() {
  if (enabled_) std::fprintf(stderr, "\n");
}

}  // namespace tempo
