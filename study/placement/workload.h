// A placement workload: requests (turns) of sessions over dense block ids, and the access
// stream they produce. A request resumes from `context` (cached KV it reads, in prefix
// order), computes `input` blocks in prefill, then decodes `output_tokens`, filling one
// output block per block_tokens generated. Before each output block the decode reads the
// whole sequence so far (dense attention), so a block evicted mid-request is fetched
// again: the fetch stall of TPOT. The stream is static: requests are served in the order
// listed, so offline policies (min) and the oracle prefetcher can read it ahead.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/time.h"
#include "policy/eviction_policy.h"

namespace tempo::placement {

struct Request {
  uint32_t session = 0;
  TimeNs arrival = 0;  // earliest start; also never before the session's previous turn ends
  std::vector<BlockId> context;
  std::vector<BlockId> input;
  uint32_t input_tokens = 0;  // new prompt tokens the prefill computes
  uint32_t output_tokens = 0;
  std::vector<BlockId> output;
};

struct Workload {
  std::string name;
  uint32_t block_tokens = 16;
  uint32_t sessions = 0;
  uint64_t num_blocks = 0;  // ids are dense in [0, num_blocks)
  std::vector<Request> requests;
};

enum class AccessKind : uint8_t { kPrefillRead, kWrite, kDecodeRead };

struct Access {
  BlockId block;
  uint32_t request;
  AccessKind kind;
  uint32_t pass;  // decode pass (output block index) for kDecodeRead, else 0
};

// Accesses of one request in the order the simulator issues them.
uint64_t access_count(const Request& r);
std::vector<Access> access_stream(const Workload& w);
// Distinct blocks the workload touches (its working set), in blocks.
uint64_t working_set_blocks(const Workload& w);
// Accesses of each session.
std::vector<uint64_t> accesses_per_session(const Workload& w);

// Writes the access stream as CSV "time,block_id,size_bytes" (time = access sequence
// number; external cache simulators replay it). Returns 0 or -EIO.
int write_access_csv(const Workload& w, uint64_t block_bytes, std::ostream& out);

}  // namespace tempo::placement
