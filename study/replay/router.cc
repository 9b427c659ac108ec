#include "router.h"

#include <stdexcept>

namespace tempo {

namespace {

// splitmix64's finalizer: chained chunk keys of one workload differ in few bits.
uint64_t mix(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

std::optional<Router> parse_router(const std::string& name) {
  if (name == "round-robin") return Router::kRoundRobin;
  if (name == "prefix-affinity") return Router::kPrefixAffinity;
  return std::nullopt;
}

const char* router_name(Router r) {
  return r == Router::kRoundRobin ? "round-robin" : "prefix-affinity";
}

std::vector<uint32_t> route(const ReplayWorkload& w, uint32_t engines, Router router) {
  if (engines == 0) throw std::invalid_argument("a replay needs at least one engine");
  std::vector<uint32_t> out;
  out.reserve(w.requests.size());
  uint64_t next = 0;  // round robin: every request; prefix-affinity: those without a chunk
  for (const ReplayRequest& q : w.requests) {
    if (router == Router::kPrefixAffinity && q.first_chunk != 0)
      out.push_back(static_cast<uint32_t>(mix(q.first_chunk) % engines));
    else
      out.push_back(static_cast<uint32_t>(next++ % engines));
  }
  return out;
}

}  // namespace tempo
