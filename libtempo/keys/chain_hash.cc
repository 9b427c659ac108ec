#include "keys/chain_hash.h"

#include <cstring>

namespace tempo {
namespace {

constexpr uint64_t kLane0 = 0x9e3779b97f4a7c15ull;  // golden ratio
constexpr uint64_t kLane1 = 0xd6e8feb86659fd93ull;
constexpr uint64_t kLayer = 0xa0761d6478bd642full;

// 64x64 -> 128 multiply, high and low halves folded together.
__extension__ using u128 = unsigned __int128;  // a GCC/Clang extension on x86-64 and arm64
inline uint64_t fold_mul(uint64_t a, uint64_t b) {
  const u128 p = static_cast<u128>(a) * b;
  return static_cast<uint64_t>(p) ^ static_cast<uint64_t>(p >> 64);
}

// Final avalanche: every input bit reaches every output bit.
inline uint64_t avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

inline uint64_t load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

uint64_t hash_bytes(uint64_t seed, const unsigned char* p, size_t n) {
  uint64_t h = seed ^ (n * kLane1);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) h = fold_mul(load64(p + i) ^ kLane0 ^ h, load64(p + i + 8) ^ kLane1);
  uint64_t tail[2] = {0, 0};
  std::memcpy(tail, p + i, n - i);
  h = fold_mul(tail[0] ^ kLane0 ^ h, tail[1] ^ kLane1 ^ (n - i));
  return avalanche(h);
}

uint64_t hash_string(uint64_t seed, std::string_view s) {
  return hash_bytes(seed, reinterpret_cast<const unsigned char*>(s.data()), s.size());
}

}  // namespace

uint64_t key_namespace_seed(const KeyNamespace& ns) {
  // Length-prefixed fields: ("ab", "c") and ("a", "bc") differ.
  uint64_t h = hash_string(kLane0, "tempokv-chain-v1");
  h = hash_string(h ^ ns.model.size(), ns.model);
  h = hash_string(h ^ ns.dtype.size(), ns.dtype);
  return avalanche(h ^ fold_mul(uint64_t{ns.tp_rank} ^ kLane0, uint64_t{ns.tp_size} ^ kLane1));
}

uint64_t chain_step(uint64_t parent, std::span<const uint32_t> chunk) {
  return hash_bytes(parent, reinterpret_cast<const unsigned char*>(chunk.data()),
                    chunk.size_bytes());
}

size_t chain_keys(uint64_t parent, std::span<const uint32_t> tokens, uint32_t chunk_tokens,
                  uint64_t* out) {
  const size_t n = tokens.size() / chunk_tokens;
  for (size_t i = 0; i < n; ++i) {
    parent = chain_step(parent, tokens.subspan(i * chunk_tokens, chunk_tokens));
    out[i] = parent;
  }
  return n;
}

uint64_t layer_group_key(uint64_t chain_key, uint32_t group) {
  return avalanche(fold_mul(chain_key ^ kLayer, (uint64_t{group} + 1) * kLane1));
}

}  // namespace tempo
