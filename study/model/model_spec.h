// The shape of a decoder-only transformer, as far as execution time and KV size depend on
// it. Definitions live in data files (data/models/*.json) so users can add their own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tempo {

struct ModelSpec {
  std::string name;
  uint32_t num_layers = 0;
  uint32_t hidden_size = 0;
  uint32_t num_attention_heads = 0;
  uint32_t num_kv_heads = 0;
  uint32_t head_dim = 0;
  uint32_t intermediate_size = 0;
  uint32_t vocab_size = 0;
  uint32_t mlp_projections = 3;   // gated MLP (gate, up, down); 2 for a plain MLP
  uint32_t weight_bytes = 2;      // per parameter (bf16)
  uint32_t kv_element_bytes = 2;  // per cached K or V element (bf16)
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // Q, K, V projections carry a bias (Qwen2)
  uint64_t max_context_tokens = 0;

  // K and V of every layer for one token.
  uint64_t kv_bytes_per_token() const;
  // Parameters of the matrix multiplies in one layer (attention projections + MLP).
  uint64_t layer_matmul_params() const;
  // Parameters a forward pass reads: every layer plus the LM head.
  uint64_t forward_weight_params() const;
  // All parameters, counting the input embedding (once if tied to the LM head).
  uint64_t parameter_count() const;
};

// Parses a model definition. `source` names the file in error messages. Returns 0, or
// -EINVAL with *error naming the source and the offending key.
int parse_model_spec(std::string_view json_text, std::string_view source, ModelSpec* out,
                     std::string* error);
// Loads a model definition file: 0, -ENOENT/-EACCES (unreadable) or -EINVAL (bad content).
int load_model_spec(const std::string& path, ModelSpec* out, std::string* error);

}  // namespace tempo
