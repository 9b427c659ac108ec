#include "placement/generators.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <numeric>
#include <unordered_map>

namespace tempo::placement {

namespace {

// SplitMix64: small, fast and specified, so a seed means the same stream everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  uint32_t between(uint32_t lo, uint32_t hi) {
    return lo + static_cast<uint32_t>(next() % (static_cast<uint64_t>(hi - lo) + 1));
  }
  TimeNs exponential_ms(double mean_ms) {
    return static_cast<TimeNs>(-std::log(1.0 - uniform()) * mean_ms * 1e6);
  }

 private:
  uint64_t s_;
};

uint32_t output_blocks(uint32_t tokens, uint32_t block_tokens) {
  return (tokens + block_tokens - 1) / block_tokens;
}

// Nominal service time, used only to space out a session's turns.
TimeNs nominal_service(uint32_t output_tokens) {
  return 30 * kNsPerMs + static_cast<TimeNs>(output_tokens) * 11 * kNsPerMs;
}

void sort_by_arrival(Workload& w) {
  std::stable_sort(w.requests.begin(), w.requests.end(),
                   [](const Request& a, const Request& b) { return a.arrival < b.arrival; });
}

}  // namespace

Workload make_chat(const ChatParams& p) {
  Workload w;
  w.name = p.sessions == 1 ? "chat-single" : "chat";
  w.block_tokens = p.block_tokens;
  w.sessions = p.sessions;
  Rng rng(p.seed);
  BlockId next_id = 0;
  for (uint32_t s = 0; s < p.sessions; ++s) {
    std::vector<BlockId> history;
    uint64_t used = 0;
    TimeNs t = static_cast<TimeNs>(s * p.stagger_ms * 1e6);
    for (;;) {
      Request r;
      r.session = s;
      r.arrival = t;
      r.context = history;
      const uint32_t in = rng.between(p.min_user_blocks, p.max_user_blocks);
      r.output_tokens = rng.between(p.min_output_tokens, p.max_output_tokens);
      r.input_tokens = in * p.block_tokens;
      for (uint32_t i = 0; i < in; ++i) r.input.push_back(next_id++);
      for (uint32_t i = 0; i < output_blocks(r.output_tokens, p.block_tokens); ++i) {
        r.output.push_back(next_id++);
      }
      const uint64_t n = access_count(r);
      if (used + n > p.accesses_per_session) {
        next_id -= r.input.size() + r.output.size();  // keep ids dense
        break;
      }
      used += n;
      history.insert(history.end(), r.input.begin(), r.input.end());
      history.insert(history.end(), r.output.begin(), r.output.end());
      t += nominal_service(r.output_tokens) + rng.exponential_ms(p.think_ms);
      w.requests.push_back(std::move(r));
    }
  }
  w.num_blocks = next_id;
  sort_by_arrival(w);
  return w;
}

Workload make_agent(const AgentParams& p) {
  Workload w;
  w.name = "agent";
  w.block_tokens = p.block_tokens;
  w.sessions = p.sessions;
  Rng rng(p.seed);
  BlockId next_id = 0;
  std::vector<BlockId> system(p.system_blocks);
  std::iota(system.begin(), system.end(), next_id);
  next_id += p.system_blocks;
  for (uint32_t s = 0; s < p.sessions; ++s) {
    std::vector<std::vector<BlockId>> steps;  // blocks each step produced
    uint64_t used = 0;
    TimeNs t = static_cast<TimeNs>(s * p.stagger_ms * 1e6);
    for (;;) {
      Request r;
      r.session = s;
      r.arrival = t;
      r.context = system;
      const size_t first_recent = steps.size() > p.window_steps ? steps.size() - p.window_steps : 0;
      if (first_recent > 0 && rng.uniform() < p.revisit_probability) {
        const auto& old = steps[rng.next() % first_recent];
        r.context.insert(r.context.end(), old.begin(), old.end());
      }
      for (size_t i = first_recent; i < steps.size(); ++i) {
        r.context.insert(r.context.end(), steps[i].begin(), steps[i].end());
      }
      const uint32_t in = rng.between(p.min_tool_blocks, p.max_tool_blocks);
      r.input_tokens = in * p.block_tokens;
      r.output_tokens = rng.between(p.min_output_tokens, p.max_output_tokens);
      std::vector<BlockId> produced;
      for (uint32_t i = 0; i < in; ++i) r.input.push_back(next_id++);
      for (uint32_t i = 0; i < output_blocks(r.output_tokens, p.block_tokens); ++i) {
        r.output.push_back(next_id++);
      }
      const uint64_t n = access_count(r);
      if (used + n > p.accesses_per_session) {
        next_id -= r.input.size() + r.output.size();
        break;
      }
      used += n;
      produced.insert(produced.end(), r.input.begin(), r.input.end());
      produced.insert(produced.end(), r.output.begin(), r.output.end());
      steps.push_back(std::move(produced));
      t += nominal_service(r.output_tokens) + rng.exponential_ms(p.think_ms);
      w.requests.push_back(std::move(r));
    }
  }
  w.num_blocks = next_id;
  sort_by_arrival(w);
  return w;
}

Workload make_docqa(const DocQaParams& p) {
  Workload w;
  w.name = "docqa";
  w.block_tokens = p.block_tokens;
  w.sessions = p.users;
  Rng rng(p.seed);
  BlockId next_id = 0;
  std::vector<BlockId> instructions(p.instruction_blocks);
  std::iota(instructions.begin(), instructions.end(), next_id);
  next_id += p.instruction_blocks;
  std::vector<std::vector<BlockId>> docs(p.documents);
  for (auto& d : docs) {
    d.resize(rng.between(p.min_doc_blocks, p.max_doc_blocks));
    std::iota(d.begin(), d.end(), next_id);
    next_id += d.size();
  }
  std::vector<double> cdf(p.documents);
  double sum = 0;
  for (uint32_t i = 0; i < p.documents; ++i) {
    sum += 1.0 / std::pow(static_cast<double>(i + 1), p.zipf_s);
    cdf[i] = sum;
  }
  std::vector<TimeNs> clock(p.users);
  for (uint32_t u = 0; u < p.users; ++u) clock[u] = static_cast<TimeNs>(u * p.stagger_ms * 1e6);
  uint64_t used = 0;
  for (uint32_t k = 0;; ++k) {
    const uint32_t u = k % p.users;
    Request r;
    r.session = u;
    r.arrival = clock[u];
    const double x = rng.uniform() * sum;
    const auto doc = static_cast<size_t>(std::lower_bound(cdf.begin(), cdf.end(), x) - cdf.begin());
    r.context = instructions;
    r.context.insert(r.context.end(), docs[std::min(doc, docs.size() - 1)].begin(),
                     docs[std::min(doc, docs.size() - 1)].end());
    r.input.push_back(next_id++);
    r.input_tokens = p.block_tokens;
    r.output_tokens = rng.between(p.min_output_tokens, p.max_output_tokens);
    for (uint32_t i = 0; i < output_blocks(r.output_tokens, p.block_tokens); ++i) {
      r.output.push_back(next_id++);
    }
    const uint64_t n = access_count(r);
    if (used + n > p.total_accesses) {
      next_id -= r.input.size() + r.output.size();
      break;
    }
    used += n;
    clock[u] += nominal_service(r.output_tokens) + rng.exponential_ms(p.think_ms);
    w.requests.push_back(std::move(r));
  }
  w.num_blocks = next_id;
  sort_by_arrival(w);
  return w;
}

int make_from_trace(const std::vector<tempo::Request>& trace, Workload* out) {
  Workload w;
  w.name = "trace";
  w.block_tokens = trace.empty() ? 16 : trace.front().chunk_tokens;
  if (w.block_tokens == 0) return -EINVAL;
  w.sessions = static_cast<uint32_t>(trace.size());
  std::unordered_map<ObjectKey, BlockId> ids;
  BlockId next_id = 0;
  for (uint32_t i = 0; i < trace.size(); ++i) {
    const tempo::Request& t = trace[i];
    if (t.chunk_tokens != w.block_tokens) return -EINVAL;
    Request r;
    r.session = i;
    r.arrival = t.arrival;
    for (ObjectKey k : t.chunk_keys) {
      auto [it, fresh] = ids.try_emplace(k, next_id);
      if (fresh) ++next_id;
      r.context.push_back(it->second);
    }
    const uint64_t chunked = t.chunk_keys.size() * static_cast<uint64_t>(w.block_tokens);
    r.input_tokens = static_cast<uint32_t>(t.input_tokens > chunked ? t.input_tokens - chunked : 0);
    r.output_tokens = t.output_tokens;
    for (uint32_t j = 0; j < output_blocks(r.output_tokens, w.block_tokens); ++j) {
      r.output.push_back(next_id++);
    }
    w.requests.push_back(std::move(r));
  }
  w.num_blocks = next_id;
  sort_by_arrival(w);
  *out = std::move(w);
  return 0;
}

std::vector<std::string> named_workloads() { return {"chat", "chat-single", "agent", "docqa"}; }

int make_named_workload(const std::string& name, uint64_t seed, Workload* out) {
  if (name == "chat") {
    ChatParams p;
    p.seed = seed;
    *out = make_chat(p);
  } else if (name == "chat-single") {
    ChatParams p;
    p.sessions = 1;
    p.accesses_per_session = 24000;
    p.seed = seed;
    *out = make_chat(p);
  } else if (name == "agent") {
    AgentParams p;
    p.seed = seed;
    *out = make_agent(p);
  } else if (name == "docqa") {
    DocQaParams p;
    p.seed = seed;
    *out = make_docqa(p);
  } else {
    return -EINVAL;
  }
  return 0;
}

}  // namespace tempo::placement
