#include "workload/request_set.h"

#include <algorithm>
#include <cerrno>
#include <cmath>

#include "core/rng.h"

namespace tempo {

std::vector<ObjectKey> document_chunk_keys(const Document& doc, uint32_t chunk_tokens,
                                           uint64_t key_namespace) {
  std::vector<ObjectKey> keys;
  const uint64_t chunks = doc.document_tokens / chunk_tokens;
  keys.reserve(chunks);
  ObjectKey key = chain_key(0, key_namespace);
  for (uint64_t i = 0; i < chunks; ++i) {
    key = chain_key(key, chain_key(doc.content_id, i));
    keys.push_back(key);
  }
  return keys;
}

uint32_t draw_output_tokens(const OutputLengthModel& model, Rng& rng) {
  const double drawn = std::round(model.median * std::exp(model.sigma * rng.normal()));
  return static_cast<uint32_t>(std::clamp(drawn, 1.0, static_cast<double>(model.cap)));
}

int make_requests(const std::vector<Document>& docs, const RequestSetOptions& o,
                  std::vector<Request>* out) {
  out->clear();
  if (!(o.prefix_cache_ratio >= 0 && o.prefix_cache_ratio <= 1)) return -EINVAL;
  if (o.chunk_tokens == 0 || o.kv_bytes_per_token == 0) return -EINVAL;
  if (o.output.cap == 0 || o.output.median == 0) return -EINVAL;
  if (!std::isfinite(o.output.sigma) || o.output.sigma < 0) return -EINVAL;
  std::vector<TimeNs> arrivals;
  if (int rc = arrival_times(o.arrivals, docs.size(), &arrivals); rc != 0) return rc;
  Rng rng(o.seed);
  out->reserve(docs.size());
  for (size_t i = 0; i < docs.size(); ++i) {
    const Document& d = docs[i];
    Request r;
    r.id = i;
    r.arrival = arrivals[i];
    r.input_tokens = d.input_tokens();
    r.chunk_tokens = o.chunk_tokens;
    r.chunk_bytes = o.chunk_tokens * o.kv_bytes_per_token;
    r.chunk_keys = document_chunk_keys(d, o.chunk_tokens, o.key_namespace);
    // Ratio of the document's tokens, in whole chunks (never past its last full chunk).
    const auto retained = static_cast<uint64_t>(
        std::floor(o.prefix_cache_ratio * static_cast<double>(d.document_tokens)));
    r.cached_tokens =
        std::min<uint64_t>(retained / o.chunk_tokens, r.chunk_keys.size()) * o.chunk_tokens;
    r.output_tokens = draw_output_tokens(o.output, rng);
    r.source = d.index;
    out->push_back(std::move(r));
  }
  return 0;
}

}  // namespace tempo
