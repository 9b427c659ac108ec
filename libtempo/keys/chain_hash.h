// The key scheme of KV objects: a chained chunk hash namespaced by model, dtype and
// tensor-parallel rank/size, with per-layer-group keys derived from the chain.
//
// A prompt's tokens are cut into chunks of `chunk_tokens`; chunk i's key hashes chunk i's
// token ids together with chunk i-1's key (the namespace seed for chunk 0), so a key names
// the whole prefix up to its chunk, as vLLM's prefix-cache block hashes and LMCache's chunk
// hashes do. Only full chunks have keys. The hash is a 64-bit multiply-fold over 16-byte
// lanes with a final avalanche: not cryptographic, built to keep a 32k-token prompt's
// chain off the scheduler's critical path (Documentation/engines.md gives the layout).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace tempo {

struct KeyNamespace {
  std::string_view model;  // e.g. "meta-llama/Llama-3.1-8B-Instruct"
  std::string_view dtype;  // e.g. "bfloat16"
  uint32_t tp_rank = 0;
  uint32_t tp_size = 1;
};

// The seed of a namespace's chains: the key "before" its first chunk.
uint64_t key_namespace_seed(const KeyNamespace& ns);

// One chunk's key from its parent's key and its token ids.
uint64_t chain_step(uint64_t parent, std::span<const uint32_t> chunk);

// Keys of the full chunks of `tokens`, the first chunk's parent being `parent` (a seed, or
// the key of the chunk before `tokens` to extend a chain): writes tokens.size() /
// chunk_tokens keys to `out` (at least that long) and returns how many. chunk_tokens > 0.
size_t chain_keys(uint64_t parent, std::span<const uint32_t> tokens, uint32_t chunk_tokens,
                  uint64_t* out);

// The key of layer group `group`'s object for a chunk whose chain key is `chain_key`.
uint64_t layer_group_key(uint64_t chain_key, uint32_t group);

}  // namespace tempo
