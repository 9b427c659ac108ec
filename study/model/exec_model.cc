#include "model/exec_model.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

namespace tempo {

PassWork& PassWork::operator+=(const PassWork& o) {
  tokens += o.tokens;
  logits_tokens += o.logits_tokens;
  attention_pairs += o.attention_pairs;
  kv_tokens_read += o.kv_tokens_read;
  kv_tokens_written += o.kv_tokens_written;
  return *this;
}

PassWork ExecModel::prefill_work(uint64_t new_tokens, uint64_t context_tokens) {
  PassWork w;
  if (new_tokens == 0) return w;
  const double n = static_cast<double>(new_tokens);
  const double c = static_cast<double>(context_tokens);
  w.tokens = new_tokens;
  w.logits_tokens = 1;
  // Token i of the chunk (0-based) attends to the context and to tokens 0..i of the chunk.
  w.attention_pairs = n * c + n * (n + 1) / 2;
  w.kv_tokens_read = context_tokens + new_tokens;
  w.kv_tokens_written = new_tokens;
  return w;
}

PassWork ExecModel::decode_work(uint64_t batch, uint64_t total_context_tokens) {
  PassWork w;
  if (batch == 0) return w;
  w.tokens = batch;
  w.logits_tokens = batch;
  // Each sequence's new token attends to its context and to itself.
  w.attention_pairs = static_cast<double>(total_context_tokens + batch);
  w.kv_tokens_read = total_context_tokens + batch;
  w.kv_tokens_written = batch;
  return w;
}

ExecModel::ExecModel(ModelSpec model, GpuSpec gpu)
    : model_(std::move(model)), gpu_(std::move(gpu)) {
  const double layers = model_.num_layers;
  r_.matmul_flops_per_token = 2.0 * layers * static_cast<double>(model_.layer_matmul_params());
  r_.logits_flops_per_token = 2.0 * model_.vocab_size * model_.hidden_size;
  // Q.K^T and P.V: two multiply-adds per head dimension per query-key pair, every layer.
  r_.attention_flops_per_pair =
      4.0 * layers * static_cast<double>(model_.num_attention_heads) * model_.head_dim;
  r_.weight_bytes = static_cast<double>(model_.forward_weight_params()) * model_.weight_bytes;
  r_.kv_bytes_per_token = static_cast<double>(model_.kv_bytes_per_token());
  r_.flops = gpu_.effective_flops();
  r_.hbm_bps = gpu_.effective_hbm_bps();
  r_.overhead_s = gpu_.iteration_overhead_us * 1e-6;
}

PassCost ExecModel::cost(const PassWork& w) const {
  PassCost c;
  if (w.tokens == 0) return c;
  c.matmul_flops = static_cast<double>(w.tokens) * r_.matmul_flops_per_token +
                   static_cast<double>(w.logits_tokens) * r_.logits_flops_per_token;
  c.attention_flops = r_.attention_flops_per_pair * w.attention_pairs;
  c.weight_bytes = r_.weight_bytes;
  c.kv_bytes = static_cast<double>(w.kv_tokens_read + w.kv_tokens_written) * r_.kv_bytes_per_token;
  c.matmul_s = std::max(c.matmul_flops / r_.flops, c.weight_bytes / r_.hbm_bps);
  c.attention_s = std::max(c.attention_flops / r_.flops, c.kv_bytes / r_.hbm_bps);
  c.overhead_s = r_.overhead_s;
  return c;
}

// Times are never negative: round half up without a libm call.
static TimeNs seconds_to_ns(double s) { return static_cast<TimeNs>(s * 1e9 + 0.5); }

TimeNs ExecModel::pass_time(const PassWork& w) const { return seconds_to_ns(cost(w).total_s()); }

TimeNs ExecModel::prefill_time(uint64_t new_tokens, uint64_t context_tokens) const {
  return pass_time(prefill_work(new_tokens, context_tokens));
}

TimeNs ExecModel::prefill_time_chunked(uint64_t new_tokens, uint64_t context_tokens,
                                       uint64_t chunk_tokens) const {
  if (chunk_tokens == 0) return prefill_time(new_tokens, context_tokens);
  TimeNs total = 0;
  uint64_t done = 0;
  while (done < new_tokens) {
    const uint64_t n = std::min(chunk_tokens, new_tokens - done);
    total += prefill_time(n, context_tokens + done);
    done += n;
  }
  return total;
}

TimeNs ExecModel::decode_step_time(uint64_t batch, uint64_t total_context_tokens) const {
  return pass_time(decode_work(batch, total_context_tokens));
}

TimeNs ExecModel::decode_step_time(std::span<const uint64_t> contexts) const {
  uint64_t total = 0;
  for (uint64_t c : contexts) total += c;
  return decode_step_time(contexts.size(), total);
}

TimeNs ExecModel::decode_steps_time(uint64_t batch, uint64_t total_context_tokens,
                                    uint64_t steps) const {
  if (batch == 0 || steps == 0) return 0;
  // Step j has total context T0 + j*b. Matmuls and overhead are the same every step; the
  // attention roofline is the larger of two lines in j (FLOPs over pairs T+b, bytes over
  // T+2b KV tokens), so the sum splits at most once where they cross.
  const double b = static_cast<double>(batch);
  const double t0 = static_cast<double>(total_context_tokens);
  const double matmul_s =
      std::max(b * (r_.matmul_flops_per_token + r_.logits_flops_per_token) / r_.flops,
               r_.weight_bytes / r_.hbm_bps);
  const double flops_per_pair = r_.attention_flops_per_pair / r_.flops;
  const double bytes_per_token = r_.kv_bytes_per_token / r_.hbm_bps;
  auto compute = [&](double j) { return flops_per_pair * (t0 + b + j * b); };
  auto memory = [&](double j) { return bytes_per_token * (t0 + 2 * b + j * b); };
  // Sum of a line over steps [from, to): count * value(from) + slope * count(count-1)/2.
  auto line_sum = [&](auto&& line, double from, double to) {
    const double count = to - from;
    if (count <= 0) return 0.0;
    const double slope = line(from + 1) - line(from);
    return count * line(from) + slope * count * (count - 1) / 2;
  };
  const double k = static_cast<double>(steps);
  const double h0 = compute(0) - memory(0);
  const double h1 = compute(k - 1) - memory(k - 1);
  double attention = 0;
  if (h0 >= 0 && h1 >= 0) {
    attention = line_sum(compute, 0, k);
  } else if (h0 <= 0 && h1 <= 0) {
    attention = line_sum(memory, 0, k);
  } else {
    // First step index on the other side of the crossing.
    const double cross = std::clamp(std::floor(-h0 / ((h1 - h0) / (k - 1))) + 1, 1.0, k - 1);
    attention = h0 > 0 ? line_sum(compute, 0, cross) + line_sum(memory, cross, k)
                       : line_sum(memory, 0, cross) + line_sum(compute, cross, k);
  }
  return seconds_to_ns(k * (matmul_s + r_.overhead_s) + attention);
}

TimeNs ExecModel::retrieval_time(uint64_t bytes) const {
  if (bytes == 0) return 0;
  return seconds_to_ns(static_cast<double>(bytes) / gpu_.effective_host_link_bps());
}

TimeNs ExecModel::retrieval_time(uint64_t bytes, double source_bps) const {
  if (bytes == 0) return 0;
  const double bps = std::min(gpu_.effective_host_link_bps(), source_bps);
  return seconds_to_ns(static_cast<double>(bytes) / bps);
}

uint64_t ExecModel::weight_bytes() const { return model_.parameter_count() * model_.weight_bytes; }

uint64_t ExecModel::kv_cache_capacity_tokens(double memory_fraction) const {
  const double usable = gpu_.hbm_capacity_gb * 1e9 * memory_fraction;
  const double free_bytes = usable - static_cast<double>(weight_bytes());
  if (free_bytes <= 0) return 0;
  return static_cast<uint64_t>(free_bytes / static_cast<double>(kv_bytes_per_token()));
}

std::string default_data_dir() {
  if (const char* env = std::getenv("TEMPO_DATA_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  std::error_code ec;
  if (std::filesystem::is_directory(TEMPO_SOURCE_DATA_DIR, ec)) return TEMPO_SOURCE_DATA_DIR;
  return TEMPO_INSTALL_DATA_DIR;
}

static std::string definition_path(std::string_view name, const std::string& data_dir,
                                   const char* kind) {
  if (name.find('/') != std::string_view::npos || name.ends_with(".json")) {
    return std::string(name);
  }
  return data_dir + "/" + kind + "/" + std::string(name) + ".json";
}

int load_exec_model(std::string_view model, std::string_view gpu, ExecModel* out,
                    std::string* error, const std::string& data_dir) {
  ModelSpec m;
  GpuSpec g;
  if (int rc = load_model_spec(definition_path(model, data_dir, "models"), &m, error); rc != 0) {
    return rc;
  }
  if (int rc = load_gpu_spec(definition_path(gpu, data_dir, "gpus"), &g, error); rc != 0) {
    return rc;
  }
  *out = ExecModel(std::move(m), std::move(g));
  return 0;
}

}  // namespace tempo
