#include "workloads.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <unordered_set>

#include "workload/documents.h"
#include "workload/request_set.h"
#include "workload/trace.h"

namespace tempo {

ReplayWorkload to_replay(const std::vector<Request>& requests) {
  ReplayWorkload w;
  std::unordered_set<ObjectKey> seen;
  for (const Request& r : requests) {
    ReplayRequest q;
    q.id = r.id;
    q.arrival = r.arrival;
    q.prompt_tokens = r.input_tokens;
    q.chunk_tokens = r.chunk_tokens;
    q.output_tokens = r.output_tokens;
    if (!r.chunk_keys.empty()) q.first_chunk = r.chunk_keys.front();
    for (ObjectKey k : r.chunk_keys) q.chunks.push_back({k, r.chunk_bytes});
    for (uint64_t i = 0; i < r.cached_chunks(); ++i) {
      const KvObject o{r.chunk_keys.at(i), r.chunk_bytes};
      q.prefix_chunks.push_back(o);
      if (seen.insert(o.key).second) w.preloaded.push_back(o);
    }
    w.requests.push_back(std::move(q));
  }
  return w;
}

namespace {

std::string past_time_range() {
  return "past the replay's time range (" +
         std::to_string(kMaxArrivalNs / kNsPerSec / 86400 / 365) + " years)";
}

// The trace requests a run keeps (sorted by arrival): --skip and --first, arrivals rebased to
// the first kept one and scaled, outputs capped only when asked. -ERANGE when the scaled span
// passes kMaxArrivalNs.
int slice_trace(const WorkloadSpec& spec, std::vector<Request>* requests, std::string* error) {
  const uint64_t skip = std::min<uint64_t>(spec.skip, requests->size());
  requests->erase(requests->begin(), requests->begin() + static_cast<ptrdiff_t>(skip));
  if (spec.first > 0 && requests->size() > spec.first) requests->resize(spec.first);
  const TimeNs origin = requests->empty() ? 0 : requests->front().arrival;
  for (Request& q : *requests) {
    const double scaled = static_cast<double>(q.arrival - origin) * spec.time_scale;
    if (!(scaled <= static_cast<double>(kMaxArrivalNs))) {
      *error = "the trace's arrivals (rebased, times --time-scale) are " + past_time_range();
      return -ERANGE;
    }
    q.arrival = static_cast<TimeNs>(std::llround(scaled));
    if (spec.cap_trace_outputs) q.output_tokens = std::min(q.output_tokens, spec.output_cap);
  }
  return 0;
}

}  // namespace

int build_workload(const WorkloadSpec& spec, const ExecModel& model, ReplayWorkload* out,
                   std::string* error) {
  // One key space per model: the same text has different KV bytes under each.
  const uint64_t key_namespace = std::hash<std::string>{}(model.model().name);
  std::vector<Request> requests;
  TraceStats stats;
  if (spec.name == "trace") {
    if (!(spec.time_scale > 0) || !std::isfinite(spec.time_scale)) {
      *error = "the time scale must be positive";
      return -EINVAL;
    }
    TraceOptions t;
    t.block_tokens = spec.trace_block_tokens;
    t.kv_bytes_per_token = model.kv_bytes_per_token();
    t.key_namespace = key_namespace;
    t.skip_malformed = spec.skip_malformed;
    const int r = load_trace(spec.trace_path, t, &requests, &stats, error);
    if (r != 0) return r;
    if (const int s = slice_trace(spec, &requests, error); s != 0) return s;
    if (requests.empty()) {
      *error = spec.trace_path + ": no requests to replay" +
               (spec.skip ? " after --skip " + std::to_string(spec.skip) : std::string());
      return -EINVAL;
    }
  } else {
    std::vector<Document> docs;
    if (spec.name == "narrativeqa") {
      docs = narrativeqa_documents(spec.seed, spec.documents ? spec.documents : 12);
    } else if (spec.name == "loogle") {
      docs = loogle_documents(spec.seed, spec.documents ? spec.documents : 16);
    } else {
      *error = "unknown workload '" + spec.name + "': accepted narrativeqa, loogle, trace";
      return -EINVAL;
    }
    RequestSetOptions o;
    o.prefix_cache_ratio = spec.prefix_cache_ratio;
    o.chunk_tokens = spec.chunk_tokens;
    o.kv_bytes_per_token = model.kv_bytes_per_token();
    o.output.cap = spec.output_cap;
    o.arrivals = spec.arrivals;
    o.seed = spec.seed;
    o.key_namespace = key_namespace;
    if (const int r = make_requests(docs, o, &requests); r != 0) {
      *error = r == -ERANGE
                   ? "arrivals " + past_time_range() + ": a higher --rate or a shorter --interval"
                   : "invalid workload options (prefix cache ratio in [0, 1], positive "
                     "sizes and cap)";
      return r;
    }
  }
  *out = to_replay(requests);
  out->computed_in_run = spec.name == "trace";
  out->skipped_lines = stats.skipped;
  out->first_skipped = stats.first_skipped;
  return 0;
}

}  // namespace tempo
