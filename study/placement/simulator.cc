#include "placement/simulator.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "placement/future.h"
#include "placement/prefetch.h"

namespace tempo::placement {

std::vector<std::string> baseline_names() {
  return {"tiered", "gpu-only", "prefix-reuse", "full-cpu-offload"};
}

TimeNs RequestMetrics::decode_stall_total() const {
  TimeNs s = 0;
  for (TimeNs t : decode_stall) s += t;
  return s;
}

namespace {

TierShape shape_for(const SimConfig& c) {
  const TierShape& s = c.shape;
  if (c.baseline == "tiered") return s;
  if (c.baseline == "gpu-only" || c.baseline == "prefix-reuse") return {s.hbm_blocks, 0, 0};
  if (c.baseline == "full-cpu-offload") return {0, s.hbm_blocks + s.dram_blocks, s.ssd_blocks};
  throw std::invalid_argument("tempo-sim: unknown baseline '" + c.baseline + "'");
}

// Tracks the wait frontier of a batch of reads issued together and charges each read's
// push of the frontier to the tier it waited on.
struct Frontier {
  TimeNs at;
  TierTimes* by_tier;
  void add(const ReadResult& r) {
    if (r.ready <= at) return;
    (*by_tier)[static_cast<int>(r.waited_on)] += r.ready - at;
    at = r.ready;
  }
};

// plan()'s `next_pass` when no decode pass of the current request is ahead.
constexpr uint32_t kAtRequestStart = UINT32_MAX;    // its prefill reads are next
constexpr uint32_t kAfterRequest = UINT32_MAX - 1;  // it has finished

// What the runtime knows at a decision point (the running request's next pass or its
// prefill, then the prefill contexts of the requests already queued behind it), produced
// span by span as the prefetcher asks, with each queued request's eta the sum of the
// estimated service times ahead of it. Per-request estimates are computed once, so a
// decision point costs only the spans it hands out, not the length of the queue.
class QueueView final : public KnownReads {
 public:
  QueueView(const Workload& w, const std::vector<Access>& stream,
            const std::vector<uint64_t>& request_begin, const ComputeCost& cost)
      : w_(w), stream_(stream), request_begin_(request_begin) {
    const uint64_t bt = w.block_tokens;
    TimeNs latest = 0;
    for (const Request& r : w.requests) {
      const uint64_t base = r.context.size() + r.input.size();
      pass_estimate_.push_back(static_cast<TimeNs>(bt) * cost.decode_step(base * bt));
      prefill_estimate_.push_back(cost.prefill(r.input_tokens, r.context.size() * bt));
      latest = std::max(latest, r.arrival);
      arrived_by_.push_back(latest);
    }
  }

  // Starts a decision point at `now` for request `current`, whose next decode pass
  // `next_pass` (or kAtRequestStart / kAfterRequest) begins at `until`; `mean_output_blocks`
  // is the running mean of finished requests' output blocks.
  void reset(uint32_t current, uint32_t next_pass, TimeNs now, TimeNs until,
             double mean_output_blocks) {
    current_ = current;
    now_ = now;
    mean_output_blocks_ = mean_output_blocks;
    spans_.clear();
    next_queued_ = current + 1;
    eta_ = until;
    own_ = {0, 0, 0};
    const Request& cur = w_.requests[current];
    if (next_pass < cur.output.size()) {
      // Positions of the next pass: after the prefill block and the earlier passes.
      const uint64_t base = cur.context.size() + cur.input.size();
      const uint64_t np = next_pass;
      const uint64_t begin = request_begin_[current] + base + np * base + np * (np + 1) / 2;
      own_ = {begin, begin + base + np, until};
      const double remaining = std::max(1.0, mean_output_blocks - static_cast<double>(np));
      eta_ = until + static_cast<TimeNs>(remaining * static_cast<double>(pass_estimate_[current]));
    } else if (next_pass == kAtRequestStart) {
      // At the start of the request: its own prefill reads are about to be issued.
      own_ = {request_begin_[current], request_begin_[current] + cur.context.size(), now};
    }
    if (own_.end > own_.begin) spans_.push_back(own_);
  }

  const KnownSpan* span(size_t i) override {
    while (spans_.size() <= i && queued(next_queued_)) {
      const uint32_t q = next_queued_++;
      spans_.push_back(
          {request_begin_[q], request_begin_[q] + w_.requests[q].context.size(), eta_});
      eta_ += prefill_estimate_[q] +
              static_cast<TimeNs>(mean_output_blocks_ * static_cast<double>(pass_estimate_[q]));
    }
    return i < spans_.size() ? &spans_[i] : nullptr;
  }

  bool contains(uint64_t pos) const override {
    if (pos >= own_.begin && pos < own_.end) return true;
    const Access& a = stream_[pos];
    return a.kind == AccessKind::kPrefillRead && a.request > current_ && queued(a.request);
  }

 private:
  // Request q (after the current one) is waiting: it and every request listed before it
  // have arrived (requests start in listed order).
  bool queued(uint32_t q) const { return q < arrived_by_.size() && arrived_by_[q] <= now_; }

  const Workload& w_;
  const std::vector<Access>& stream_;
  const std::vector<uint64_t>& request_begin_;
  std::vector<TimeNs> pass_estimate_;     // per request: one decode pass at its prefill size
  std::vector<TimeNs> prefill_estimate_;  // per request: its prefill with a full cache hit
  std::vector<TimeNs> arrived_by_;        // per request: the latest arrival up to it
  uint32_t current_ = 0;
  TimeNs now_ = 0;
  double mean_output_blocks_ = 1;
  KnownSpan own_;
  std::vector<KnownSpan> spans_;  // handed out so far at this decision point
  uint32_t next_queued_ = 0;
  TimeNs eta_ = 0;  // the eta of the next queued request's span
};

class Engine {
 public:
  Engine(const Workload& w, const SimConfig& c, const ComputeCost& cost)
      : w_(w),
        c_(c),
        cost_(cost),
        stream_(access_stream(w)),
        future_(stream_, w.num_blocks),
        cache_(cache_config()),
        prefetcher_(make_prefetcher(c.prefetch, c.prefetch_depth)),
        request_begin_(w.requests.size() + 1, 0),
        queue_(w, stream_, request_begin_, cost) {
    if (!prefetcher_)
      throw std::invalid_argument("tempo-sim: unknown prefetcher '" + c.prefetch + "'");
    for (const Access& a : stream_) ++request_begin_[a.request + 1];
    for (size_t i = 1; i < request_begin_.size(); ++i) request_begin_[i] += request_begin_[i - 1];
    cache_.reserve_blocks(w.num_blocks);
    out_.demand_fetch_latency.reserve(stream_.size());
  }

  RunResult run();

 private:
  TieredCacheConfig cache_config() {
    TieredCacheConfig t;
    t.shape = shape_for(c_);
    t.block_bytes = cost_.kv_bytes_per_token() * w_.block_tokens;
    t.policy = c_.baseline == "prefix-reuse" ? "lru" : c_.policy;
    t.policy_options.ewma_alpha = c_.ewma_alpha;
    t.policy_options.future = &future_;
    t.pcie_up = c_.pcie_up;
    t.pcie_down = c_.pcie_down;
    t.ssd = c_.ssd;
    t.demand_priority = c_.demand_priority;
    return t;
  }
  ReadResult read(uint64_t pos, TimeNs now);
  void write(uint64_t pos, TimeNs now);
  void plan(uint32_t current, uint32_t next_pass, TimeNs now, TimeNs until);

  const Workload& w_;
  const SimConfig& c_;
  const ComputeCost& cost_;
  std::vector<Access> stream_;
  StreamFuture future_;
  TieredCache cache_;
  std::unique_ptr<Prefetcher> prefetcher_;
  std::vector<uint64_t> request_begin_;  // first stream position of each request
  QueueView queue_;
  uint64_t pos_ = 0;
  RunResult out_;
  double mean_output_blocks_ = 1;
  uint64_t completed_ = 0;
};

ReadResult Engine::read(uint64_t pos, TimeNs now) {
  future_.advance(pos);
  const BlockId b = stream_[pos].block;
  const ReadResult r = cache_.read(b, now);
  prefetcher_->on_read(b);
  if (r.source == Source::kDram || r.source == Source::kSsd) {
    out_.demand_fetch_latency.push_back(r.ready - now);
  }
  return r;
}

void Engine::write(uint64_t pos, TimeNs now) {
  future_.advance(pos);
  cache_.write(stream_[pos].block, now);
}

// A decision point for the prefetcher (skipped when it never plans).
void Engine::plan(uint32_t current, uint32_t next_pass, TimeNs now, TimeNs until) {
  if (!prefetcher_->plans()) return;
  queue_.reset(current, next_pass, now, until, mean_output_blocks_);
  PrefetchView v{cache_, stream_, future_, pos_, queue_, now, until};
  prefetcher_->plan(v);
}

RunResult Engine::run() {
  out_.workload = w_.name;
  out_.policy = c_.baseline == "prefix-reuse" ? "lru" : c_.policy;
  out_.prefetch = c_.prefetch;
  out_.baseline = c_.baseline;
  out_.shape = cache_.config().shape;
  out_.block_bytes = cache_.block_bytes();
  out_.accesses = stream_.size();
  const uint64_t bt = w_.block_tokens;
  const bool prefix_only = c_.baseline == "prefix-reuse";
  uint32_t sessions = w_.sessions;
  for (const Request& r : w_.requests) sessions = std::max(sessions, r.session + 1);
  std::vector<TimeNs> session_free(sessions, 0);
  TimeNs gpu_free = 0;
  out_.requests.reserve(w_.requests.size());
  for (uint32_t ri = 0; ri < w_.requests.size(); ++ri) {
    const Request& r = w_.requests[ri];
    RequestMetrics m;
    m.session = r.session;
    m.arrival = r.arrival;
    const TimeNs start = std::max({r.arrival, gpu_free, session_free[r.session]});
    if (start > gpu_free && ri > 0) plan(ri - 1, kAfterRequest, gpu_free, start);
    m.start = start;
    plan(ri, kAtRequestStart, start, start);

    // Prefill: fetch what is cached, recompute what is not.
    Frontier f{start, &m.ttft_wait};
    bool broken = false;
    for (size_t i = 0; i < r.context.size(); ++i) {
      const ReadResult res = read(pos_++, start);
      if (res.source == Source::kRecompute || broken) {
        ++m.recomputed_blocks;
        broken = broken || prefix_only;
        continue;
      }
      f.add(res);
    }
    const uint64_t recomputed_tokens = m.recomputed_blocks * bt;
    const uint64_t cached_tokens = r.context.size() * bt - recomputed_tokens;
    m.prefill_compute = cost_.prefill(r.input_tokens + recomputed_tokens, cached_tokens);
    TimeNs t = f.at + m.prefill_compute;
    for (size_t i = 0; i < r.input.size(); ++i) write(pos_++, t);
    m.ttft = t - start;

    // Decode: one pass over the sequence per output block.
    uint64_t seq_blocks = r.context.size() + r.input.size();
    uint32_t left = r.output_tokens;
    for (uint32_t j = 0; j < r.output.size(); ++j) {
      Frontier d{t, &m.decode_stall};
      TimeNs recompute = 0;
      for (uint64_t k = 0; k < seq_blocks; ++k) {
        const ReadResult res = read(pos_++, t);
        if (res.source == Source::kRecompute) {
          recompute += cost_.prefill(bt, k * bt);
        } else {
          d.add(res);
        }
      }
      m.decode_stall[static_cast<int>(Tier::kNone)] += recompute;
      t = d.at + recompute;
      const uint32_t tokens = std::min<uint32_t>(left, static_cast<uint32_t>(bt));
      const TimeNs compute = tokens * cost_.decode_step(seq_blocks * bt);
      m.decode_compute += compute;
      plan(ri, j + 1, t, t + compute);
      t += compute;
      write(pos_++, t);
      ++seq_blocks;
      left -= tokens;
    }
    m.output_tokens = r.output_tokens;
    m.end = t;
    gpu_free = t;
    session_free[r.session] = t;
    ++completed_;
    mean_output_blocks_ += (static_cast<double>(r.output.size()) - mean_output_blocks_) /
                           static_cast<double>(completed_);
    out_.requests.push_back(m);
  }
  out_.makespan = gpu_free;
  out_.counters = cache_.counters();
  return std::move(out_);
}

}  // namespace

RunResult simulate(const Workload& w, const SimConfig& config, const ComputeCost& cost) {
  Engine e(w, config, cost);
  return e.run();
}

}  // namespace tempo::placement
