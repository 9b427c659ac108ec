#include "model/model_spec.h"

#include <cerrno>

#include "core/text_file.h"
#include "model/spec_json.h"

namespace tempo {

uint64_t ModelSpec::kv_bytes_per_token() const {
  return 2ull * num_layers * num_kv_heads * head_dim * kv_element_bytes;
}

uint64_t ModelSpec::layer_matmul_params() const {
  const uint64_t h = hidden_size;
  const uint64_t q = uint64_t{num_attention_heads} * head_dim;
  const uint64_t kv = uint64_t{num_kv_heads} * head_dim;
  return h * q + 2 * h * kv + q * h + uint64_t{mlp_projections} * h * intermediate_size;
}

uint64_t ModelSpec::forward_weight_params() const {
  return uint64_t{num_layers} * layer_matmul_params() + uint64_t{vocab_size} * hidden_size;
}

uint64_t ModelSpec::parameter_count() const {
  const uint64_t h = hidden_size;
  const uint64_t embedding = tie_word_embeddings ? 0 : uint64_t{vocab_size} * h;
  // Two RMSNorm weight vectors per layer and the final norm.
  const uint64_t norms = uint64_t{num_layers} * 2 * h + h;
  const uint64_t bias =
      attention_bias
          ? uint64_t{num_layers} * (uint64_t{num_attention_heads} + 2 * num_kv_heads) * head_dim
          : 0;
  return forward_weight_params() + embedding + norms + bias;
}

int parse_model_spec(std::string_view json_text, std::string_view source, ModelSpec* out,
                     std::string* error) {
  nlohmann::json j;
  if (int rc = spec_json::parse_object(json_text, source, &j, error); rc != 0) return rc;
  ModelSpec m;
  spec_json::Reader r(j, source, error);
  std::string notes;
  r.text("name", true, &m.name);
  r.text("notes", false, &notes);
  r.count("num_hidden_layers", true, &m.num_layers);
  r.count("hidden_size", true, &m.hidden_size);
  r.count("num_attention_heads", true, &m.num_attention_heads);
  r.count("num_key_value_heads", true, &m.num_kv_heads);
  r.count("intermediate_size", true, &m.intermediate_size);
  r.count("vocab_size", true, &m.vocab_size);
  r.count("mlp_projections", false, &m.mlp_projections);
  r.count64("max_context_tokens", true, &m.max_context_tokens);
  r.flag("tie_word_embeddings", false, &m.tie_word_embeddings);
  r.flag("attention_bias", false, &m.attention_bias);
  r.dtype_bytes("dtype", true, &m.weight_bytes);
  m.kv_element_bytes = m.weight_bytes;
  r.dtype_bytes("kv_cache_dtype", false, &m.kv_element_bytes);
  r.count("head_dim", false, &m.head_dim);
  r.reject_unknown_keys();
  if (r.ok() && m.num_attention_heads % m.num_kv_heads != 0) {
    r.fail("num_key_value_heads", "must divide num_attention_heads");
  }
  if (r.ok() && m.mlp_projections > 3) r.fail("mlp_projections", "must be 1, 2 or 3");
  if (r.ok() && m.head_dim == 0) {
    if (m.hidden_size % m.num_attention_heads != 0) {
      r.fail("head_dim", "missing, and hidden_size is not a multiple of num_attention_heads");
    } else {
      m.head_dim = m.hidden_size / m.num_attention_heads;
    }
  }
  if (!r.ok()) return -EINVAL;
  *out = std::move(m);
  return 0;
}

int load_model_spec(const std::string& path, ModelSpec* out, std::string* error) {
  std::string text;
  if (int rc = read_text_file(path, "model spec", &text, error); rc != 0) return rc;
  return parse_model_spec(text, path, out, error);
}

}  // namespace tempo
