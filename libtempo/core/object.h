// KV objects and manifests.
#pragma once

#include <cstdint>
#include <vector>

namespace tempo {

// A KV object is keyed by its (prefix-chained) chunk hash.
using ObjectKey = uint64_t;

// One independently identified unit of reusable prefix KV (default: a 256-token chunk).
struct KvObject {
  ObjectKey key = 0;
  uint64_t bytes = 0;
  friend bool operator==(const KvObject&, const KvObject&) = default;
};

// A claim's manifest: the ordered list of the objects its retrieval reads.
using Manifest = std::vector<KvObject>;

inline uint64_t manifest_bytes(const Manifest& m) {
  uint64_t sum = 0;
  for (const auto& o : m) sum += o.bytes;
  return sum;
}

}  // namespace tempo
