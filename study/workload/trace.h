// JSONL request traces in the format public KV-cache traces use (e.g. Mooncake's): one
// request per line,
//   {"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, ...]}
// timestamp in ms from the start of the trace; hash_ids identify the prompt's blocks of
// `block_tokens` tokens (the last may be partial) so that equal ids mean reusable KV.
// Other members are ignored. Blank lines at the end are ignored; one before a request line is
// malformed ("empty line").
//
// Limits, each refused with "<source>:<line>: <problem>": a line is at most
// kMaxTraceLineBytes (a longer one is not read whole: reading stops there), input_length and
// output_length are 1 to kMaxTraceTokens, timestamp 0 to kMaxTraceTimestampMs.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "workload/request.h"

namespace tempo {

inline constexpr size_t kMaxTraceLineBytes = size_t{16} << 20;
inline constexpr uint64_t kMaxTraceTokens = uint64_t{1} << 24;  // 16 Mi tokens per request
inline constexpr double kMaxTraceTimestampMs = 9.0e12;          // ~285 years: within TimeNs

struct TraceOptions {
  uint32_t block_tokens = 512;
  uint64_t kv_bytes_per_token = 0;  // from the model; sets Request::chunk_bytes
  uint64_t key_namespace = 0;
  // Skip lines that fail validation (and count them) instead of failing the whole trace.
  bool skip_malformed = false;
};

struct TraceStats {
  uint64_t lines = 0;         // lines read
  uint64_t requests = 0;      // requests produced
  uint64_t skipped = 0;       // malformed lines skipped (skip_malformed only)
  std::string first_skipped;  // the error of the first skipped line
  uint64_t reordered = 0;     // requests whose timestamp was earlier than a line before them
};

// Parses a trace into requests sorted by arrival (stable: file order among equal times).
// Request::cached_tokens is the leading run of full blocks whose ids an earlier request
// (in arrival order) also had as full blocks: what a store that kept every computed block
// would hit. Returns 0, or -EINVAL with *error = "<source>:<line>: <problem>" for the first
// malformed line (unless skip_malformed), or for bad options; -ENOENT/-EACCES/-EISDIR/-EIO for
// an unreadable file or stream ("<source>: cannot read: <errno text>"). On error *out is left
// empty.
int parse_trace(std::istream& in, std::string_view source, const TraceOptions& options,
                std::vector<Request>* out, TraceStats* stats, std::string* error);
int load_trace(const std::string& path, const TraceOptions& options, std::vector<Request>* out,
               TraceStats* stats, std::string* error);

}  // namespace tempo
