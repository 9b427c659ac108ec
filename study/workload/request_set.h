// Turns a document set into requests: prefix cache ratio in whole chunks, chunk keys and
// bytes for the model, output lengths, arrivals.
#pragma once

#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "workload/arrivals.h"
#include "workload/documents.h"
#include "workload/request.h"

namespace tempo {

// Output lengths: log-normal around `median` tokens with `sigma`, rounded, at least 1;
// a draw at or above `cap` is cut to the cap (the generation limit), the rest end
// naturally below it. The defaults (mean about 106 of 128, 35% at the cap) follow from the
// paper's reported throughput and TTFT; see Documentation/workloads.md.
struct OutputLengthModel {
  uint32_t median = 112;
  double sigma = 0.35;
  uint32_t cap = 128;
};

struct RequestSetOptions {
  // Fraction of each document's tokens whose KV is retained, rounded down to whole
  // chunks; the question and any final partial chunk always stay uncached.
  double prefix_cache_ratio = 1.0;
  uint32_t chunk_tokens = 256;
  uint64_t kv_bytes_per_token = 0;  // from the model (ExecModel::kv_bytes_per_token)
  OutputLengthModel output;
  ArrivalSpec arrivals;
  uint64_t seed = 1;           // output lengths
  uint64_t key_namespace = 0;  // separates key spaces (e.g. one per model)
};

// Returns 0, or -EINVAL for a ratio outside [0, 1], a zero chunk size, zero KV bytes per
// token, a zero cap or median, a negative or non-finite sigma, or an arrival error.
int make_requests(const std::vector<Document>& docs, const RequestSetOptions& options,
                  std::vector<Request>* out);

// The chunk keys of a document: one per full chunk of its text, chained from the start.
std::vector<ObjectKey> document_chunk_keys(const Document& doc, uint32_t chunk_tokens,
                                           uint64_t key_namespace);

// One output length from `model`.
uint32_t draw_output_tokens(const OutputLengthModel& model, Rng& rng);

}  // namespace tempo
