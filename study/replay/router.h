// Which emulated engine serves each request of a replay with several engines (and hosts).
//   round-robin:     request k (in arrival order) goes to engine k mod N;
//   prefix-affinity: requests whose prompts start with the same chunk go to the same engine:
//                    the engine is splitmix64(key of the prompt's first full chunk) mod N.
//                    The first chunk's key is prefix-chained (a chunk hash as vLLM and LMCache
//                    compute it), so it names the document or the shared prefix a request
//                    starts with; a prompt shorter than one chunk has no key and is placed
//                    round-robin among such prompts.
// Engines are numbered host by host: engine g runs on host g / engines_per_host.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "replay_request.h"

namespace tempo {

enum class Router : uint8_t { kRoundRobin, kPrefixAffinity };

// "round-robin" or "prefix-affinity".
std::optional<Router> parse_router(const std::string& name);
const char* router_name(Router r);

// The engine (0 .. engines-1) of every request of `w`, in the workload's order.
// Throws std::invalid_argument for zero engines.
std::vector<uint32_t> route(const ReplayWorkload& w, uint32_t engines, Router router);

}  // namespace tempo
