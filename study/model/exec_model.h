// The shared execution-time model: a roofline over one forward pass of the engine.
//
// A pass is described by its work (PassWork): rows through the layers, rows through the LM
// head, query-key pairs of attention, and KV tokens read and written. Its time is
//   max(matmul FLOPs / F, weight bytes / B)        matrix multiplies (weights read once)
// + max(attention FLOPs / F, KV bytes / B)         attention over the cached context
// + iteration overhead
// where F and B are the GPU's peak compute and HBM bandwidth times their efficiency
// factors. Prefill is compute-bound, decode memory-bound; both come out of the same two
// rooflines. Works add, so a mixed step (chunked prefill batched with decodes) costs one
// pass: weights read once, overhead once. See Documentation/execution-model.md.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/time.h"
#include "model/gpu_spec.h"
#include "model/model_spec.h"

namespace tempo {

struct PassWork {
  uint64_t tokens = 0;          // rows through every layer's matrix multiplies
  uint64_t logits_tokens = 0;   // rows through the LM head (sampled positions)
  double attention_pairs = 0;   // sum over query tokens of the keys each attends to
  uint64_t kv_tokens_read = 0;  // KV tokens attention reads from HBM
  uint64_t kv_tokens_written = 0;

  PassWork& operator+=(const PassWork& o);
  friend PassWork operator+(PassWork a, const PassWork& b) { return a += b; }
};

// The roofline terms of one pass, in FLOPs, bytes and seconds (for reports and tests).
struct PassCost {
  double matmul_flops = 0;
  double attention_flops = 0;
  double weight_bytes = 0;
  double kv_bytes = 0;
  double matmul_s = 0;     // max(compute, memory) of the matrix multiplies
  double attention_s = 0;  // max(compute, memory) of attention
  double overhead_s = 0;
  double total_s() const { return matmul_s + attention_s + overhead_s; }
};

class ExecModel {
 public:
  ExecModel() = default;
  ExecModel(ModelSpec model, GpuSpec gpu);

  const ModelSpec& model() const { return model_; }
  const GpuSpec& gpu() const { return gpu_; }
  uint64_t kv_bytes_per_token() const { return model_.kv_bytes_per_token(); }

  // Prefill of `new_tokens` that attend causally to `context_tokens` already cached, in
  // one pass, ending with one sampled token. 0 when there is nothing to prefill.
  static PassWork prefill_work(uint64_t new_tokens, uint64_t context_tokens);
  // One decode step of `batch` sequences whose cached contexts total `total_context_tokens`
  // (attention is linear in context, so the total is all that matters).
  static PassWork decode_work(uint64_t batch, uint64_t total_context_tokens);

  PassCost cost(const PassWork& w) const;
  TimeNs pass_time(const PassWork& w) const;

  TimeNs prefill_time(uint64_t new_tokens, uint64_t context_tokens) const;
  // The same prefill split into passes of at most `chunk_tokens` (chunked prefill, one
  // pass per chunk, each chunk attending to everything before it).
  TimeNs prefill_time_chunked(uint64_t new_tokens, uint64_t context_tokens,
                              uint64_t chunk_tokens) const;
  TimeNs decode_step_time(uint64_t batch, uint64_t total_context_tokens) const;
  TimeNs decode_step_time(std::span<const uint64_t> contexts) const;
  // `steps` consecutive decode steps of a fixed batch, each growing every context by one
  // token, in closed form (O(1)); equals the sum of decode_step_time over the steps up to
  // rounding (at most one nanosecond per step).
  TimeNs decode_steps_time(uint64_t batch, uint64_t total_context_tokens, uint64_t steps) const;
  // Host-to-GPU transfer of `bytes` over the host link.
  TimeNs retrieval_time(uint64_t bytes) const;
  // The same transfer when the source is slower than the host link (e.g. a CXL x8 memory
  // device): the slower of the two rates, in bytes/s, bounds it.
  TimeNs retrieval_time(uint64_t bytes, double source_bps) const;

  // Bytes of the weights resident in HBM.
  uint64_t weight_bytes() const;
  // KV tokens that fit in `memory_fraction` of HBM after the weights (0 if none).
  uint64_t kv_cache_capacity_tokens(double memory_fraction) const;

 private:
  // Per-unit costs derived once from the two specs (a TTU pass asks thousands of times).
  struct Rates {
    double matmul_flops_per_token = 0;  // all layers
    double logits_flops_per_token = 0;
    double attention_flops_per_pair = 0;
    double weight_bytes = 0;  // read once per pass
    double kv_bytes_per_token = 0;
    double flops = 1;  // effective FLOP/s
    double hbm_bps = 1;
    double overhead_s = 0;
  };

  ModelSpec model_;
  GpuSpec gpu_;
  Rates r_;
};

// Where model and GPU definitions live: $TEMPO_DATA_DIR, else the source tree's data/
// when it exists, else the installed share/tempokv.
std::string default_data_dir();

// Builds an ExecModel from definitions. `model` and `gpu` are either file paths (they
// contain '/' or end in ".json") or names looked up as <data_dir>/models/<model>.json and
// <data_dir>/gpus/<gpu>.json. Returns 0 or the loader's negative errno with *error set.
int load_exec_model(std::string_view model, std::string_view gpu, ExecModel* out,
                    std::string* error, const std::string& data_dir = default_data_dir());

}  // namespace tempo
