// libFuzzer target: the JSONL trace parser (workload/trace.h), as tempo-sim and tempo-replay
// call it. Any input either parses into requests that keep the documented limits or fails
// with "<source>:<line>: <problem>"; nothing crashes, overflows or reads a line whole past
// kMaxTraceLineBytes.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "workload/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  tempo::TraceOptions o;
  o.block_tokens = 16;
  o.kv_bytes_per_token = 1024;
  o.skip_malformed = (data[0] & 1) != 0;
  std::istringstream in(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  std::vector<tempo::Request> reqs;
  tempo::TraceStats stats;
  std::string error;
  const int r = tempo::parse_trace(in, "fuzz", o, &reqs, &stats, &error);
  if (r != 0) {
    if (error.rfind("fuzz:", 0) != 0 || !reqs.empty()) __builtin_trap();
    return 0;
  }
  if (stats.requests != reqs.size() || stats.requests + stats.skipped > stats.lines)
    __builtin_trap();
  tempo::TimeNs last = 0;
  for (const tempo::Request& q : reqs) {
    if (q.arrival < last || q.input_tokens == 0 || q.input_tokens > tempo::kMaxTraceTokens ||
        q.output_tokens == 0 || q.output_tokens > tempo::kMaxTraceTokens ||
        q.cached_tokens > q.input_tokens || q.chunk_keys.size() * o.block_tokens > q.input_tokens)
      __builtin_trap();
    last = q.arrival;
  }
  return 0;
}
