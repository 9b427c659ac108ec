#include "workload/request.h"

namespace tempo {

namespace {

// SplitMix64's finalizer: a bijective 64-bit mix.
uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

}  // namespace

ObjectKey chain_key(ObjectKey previous, uint64_t content) {
  return mix64(mix64(previous + 0x9e3779b97f4a7c15ull) ^ mix64(content));
}

Manifest Request::manifest() const {
  Manifest m;
  const uint64_t n = cached_chunks();
  m.reserve(n);
  for (uint64_t i = 0; i < n && i < chunk_keys.size(); ++i) {
    m.push_back({chunk_keys[i], chunk_bytes});
  }
  return m;
}

}  // namespace tempo
