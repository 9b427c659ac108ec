// A request as tempo-replay serves it: its prompt, the chunk objects of its prompt's
// reusable prefix (prefix-chained keys, so equal prefixes share keys), its output.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/object.h"
#include "core/time.h"

namespace tempo {

struct ReplayRequest {
  uint64_t id = 0;
  TimeNs arrival = 0;
  uint64_t prompt_tokens = 0;
  uint64_t chunk_tokens = 256;          // tokens per chunk object
  std::vector<KvObject> prefix_chunks;  // the whole chunks reusable at arrival, in prompt order
  std::vector<KvObject> chunks;         // every whole chunk of the prompt (prefix_chunks first)
  uint32_t output_tokens = 1;           // natural length, at most the generation limit
  ObjectKey first_chunk = 0;  // key of the prompt's first full chunk (cached or not), 0: none
};

// A workload: the requests in arrival order, and the chunk objects on the SSD tier before
// the run starts (the paper's "precomputed KV retained on SSD"; for traces, every block an
// earlier request computed).
struct ReplayWorkload {
  std::vector<ReplayRequest> requests;
  std::vector<KvObject> preloaded;
  // Traces: `preloaded` is what earlier requests of the trace computed (a replay across
  // hosts saves it when they do instead); document sets: KV precomputed before the run.
  bool computed_in_run = false;
  uint64_t skipped_lines = 0;  // traces: malformed lines skipped (--skip-malformed) ...
  std::string first_skipped;   // ... and the first one's error
};

}  // namespace tempo
