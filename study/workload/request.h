// One serving request as the workloads produce it and tempo-replay consumes it.
#pragma once

#include <cstdint>
#include <vector>

#include "core/object.h"
#include "core/time.h"

namespace tempo {

struct Request {
  uint64_t id = 0;     // position in the workload, from 0
  TimeNs arrival = 0;  // submission time from the start of the run
  uint64_t input_tokens = 0;
  // Leading prompt tokens whose KV is reusable at arrival (whole chunks): retained on the
  // SSD tier for the document sets, seen earlier in the trace for JSONL traces.
  uint64_t cached_tokens = 0;
  uint32_t output_tokens = 0;  // tokens generated, the first included (natural end or cap)
  uint32_t chunk_tokens = 256;
  uint64_t chunk_bytes = 0;  // KV bytes of one chunk for the model (chunk_tokens x per-token)
  // Prefix-chained keys of the prompt's full chunks, in order: equal prefixes share keys.
  std::vector<ObjectKey> chunk_keys;
  uint64_t source = 0;  // document index, or 1-based line of a trace

  uint64_t cached_chunks() const { return chunk_tokens ? cached_tokens / chunk_tokens : 0; }
  uint64_t uncached_tokens() const { return input_tokens - cached_tokens; }
  uint64_t cached_bytes() const { return cached_chunks() * chunk_bytes; }
  // The claim manifest: the cached chunks, in prefix order.
  Manifest manifest() const;
};

// Key of the chunk after `previous` (0 for the first chunk) whose own content is `content`.
// A key depends on every chunk before it, like vLLM block hashes and LMCache chunk hashes.
ObjectKey chain_key(ObjectKey previous, uint64_t content);

}  // namespace tempo
