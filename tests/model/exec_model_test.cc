#include "model/exec_model.h"

#include <gtest/gtest.h>

#include <array>
#include <string>

namespace tempo {
namespace {

// Two layers, hidden 8, two query heads and one KV head of 4 dims, MLP 16, vocab 10:
// 576 matmul parameters per layer, 1232 read per pass (2464 bytes), 32 KV bytes per token.
ModelSpec tiny_model() {
  ModelSpec m;
  m.name = "tiny";
  m.num_layers = 2;
  m.hidden_size = 8;
  m.num_attention_heads = 2;
  m.num_kv_heads = 1;
  m.head_dim = 4;
  m.intermediate_size = 16;
  m.vocab_size = 10;
  m.max_context_tokens = 64;
  return m;
}

// 5e5 FLOP/s and 5e5 B/s effective, 2.5e5 B/s host link, 100 us per pass.
GpuSpec slow_gpu() {
  GpuSpec g;
  g.name = "slow";
  g.peak_tflops = 1e-6;
  g.compute_efficiency = 0.5;
  g.hbm_bandwidth_gbps = 1e-3;
  g.hbm_efficiency = 0.5;
  g.host_link_bandwidth_gbps = 1e-3;
  g.host_link_efficiency = 0.25;
  g.iteration_overhead_us = 100;
  g.hbm_capacity_gb = 1e-5;
  return g;
}

TEST(ExecModel, PrefillRooflineByHand) {
  const ExecModel em(tiny_model(), slow_gpu());
  // 4 new tokens after 2 cached: pairs 4*2 + (1+2+3+4) = 18; KV read 6, written 4.
  const PassWork w = ExecModel::prefill_work(4, 2);
  EXPECT_EQ(w.tokens, 4u);
  EXPECT_EQ(w.logits_tokens, 1u);
  EXPECT_EQ(w.attention_pairs, 18.0);
  EXPECT_EQ(w.kv_tokens_read, 6u);
  EXPECT_EQ(w.kv_tokens_written, 4u);
  const PassCost c = em.cost(w);
  EXPECT_EQ(c.matmul_flops, 2.0 * 4 * 2 * 576 + 2.0 * 1 * 10 * 8);  // 9376
  EXPECT_EQ(c.attention_flops, 4.0 * 2 * 8 * 18);                   // 1152
  EXPECT_EQ(c.weight_bytes, 2464.0);
  EXPECT_EQ(c.kv_bytes, 10.0 * 32);
  // Compute-bound on both rooflines: 9376/5e5 + 1152/5e5 + 100 us.
  EXPECT_DOUBLE_EQ(c.matmul_s, 0.018752);
  EXPECT_DOUBLE_EQ(c.attention_s, 0.002304);
  EXPECT_EQ(em.prefill_time(4, 2), 21'156'000);
  EXPECT_EQ(em.prefill_time(0, 2), 0);
}

TEST(ExecModel, AttentionGrowsWithContext) {
  const ExecModel em(tiny_model(), slow_gpu());
  // Same 4 tokens after 12 cached: pairs 48 + 10 = 58, attention 4*2*8*58 = 3712 FLOPs.
  EXPECT_EQ(em.prefill_time(4, 12), 21'156'000 + (3712 - 1152) * 2'000);
  EXPECT_GT(em.decode_step_time(1, 60), em.decode_step_time(1, 10));
}

TEST(ExecModel, DecodeStepByHand) {
  const ExecModel em(tiny_model(), slow_gpu());
  // Batch 2, contexts totalling 10: matmul 2*2*2*576 + 2*2*80 = 4928 FLOPs; attention
  // pairs 12 -> 768 FLOPs; KV 14 tokens = 448 bytes (under the compute time).
  EXPECT_EQ(em.decode_step_time(2, 10), 9'856'000 + 1'536'000 + 100'000);
  const std::array<uint64_t, 2> contexts = {3, 7};
  EXPECT_EQ(em.decode_step_time(contexts), em.decode_step_time(2, 10));
  EXPECT_EQ(em.decode_step_time(0, 0), 0);
}

TEST(ExecModel, DecodeIsMemoryBoundOnAFastCore) {
  GpuSpec g = slow_gpu();
  g.peak_tflops = 1.0;  // compute time becomes negligible next to 5e5 B/s
  const ExecModel em(tiny_model(), g);
  // Weights 2464 B + KV 448 B at 5e5 B/s, + 100 us.
  EXPECT_EQ(em.decode_step_time(2, 10), 4'928'000 + 896'000 + 100'000);
}

TEST(ExecModel, DecodeStepsInClosedForm) {
  const ExecModel em(tiny_model(), slow_gpu());
  // Batch 2 from 10 context tokens, 3 steps: contexts 10, 12, 14 (compute-bound attention):
  // 3 x (9.856 + 0.1) ms + (768 + 896 + 1024) FLOPs / 5e5.
  EXPECT_EQ(em.decode_steps_time(2, 10, 3), 3 * 9'956'000 + 5'376'000);
  EXPECT_EQ(em.decode_steps_time(2, 10, 1), em.decode_step_time(2, 10));
  EXPECT_EQ(em.decode_steps_time(2, 10, 0), 0);
  EXPECT_EQ(em.decode_steps_time(0, 10, 5), 0);
}

// Against the step-by-step sum on the shipped models, where decode attention crosses from
// compute-bound to memory-bound as context grows (or stays on one side).
TEST(ExecModel, DecodeStepsMatchesStepByStep) {
  for (const char* name : {"llama-3.1-8b-instruct", "qwen2.5-14b-instruct"}) {
    ExecModel em;
    std::string err;
    ASSERT_EQ(load_exec_model(name, "h100-pcie-80gb", &em, &err), 0) << err;
    for (uint64_t batch : {1u, 4u, 64u}) {
      for (uint64_t ctx : {0u, 1000u, 100000u}) {
        TimeNs loop = 0;
        for (uint64_t j = 0; j < 500; ++j) loop += em.decode_step_time(batch, ctx + j * batch);
        EXPECT_NEAR(static_cast<double>(em.decode_steps_time(batch, ctx, 500)),
                    static_cast<double>(loop), 500.0)
            << name << " batch " << batch << " ctx " << ctx;
      }
    }
  }
}

// Attention that changes side within the run: per query-key pair 64 FLOPs at 5e5 FLOP/s
// (128 us), per KV token 32 bytes at 2.6e5 B/s (123 us). A batch-1 step costs
// max(128 (T+1), 123 (T+2)) us: memory-bound up to T = 24, compute-bound after.
TEST(ExecModel, DecodeStepsAcrossTheCrossing) {
  ModelSpec m = tiny_model();
  GpuSpec g = slow_gpu();
  // Per pair: 64 FLOPs at 5e5 = 128 us; per KV token: 32 B at B. With B = 2.5e5 B/s a KV
  // token costs 128 us too, so (T+b) vs (T+2b) makes memory win; make memory win only
  // through the +b term by a slightly faster HBM: 32 B at 2.6e5 B/s = 123.08 us.
  g.hbm_bandwidth_gbps = 5.2e-4;  // x 0.5 efficiency = 2.6e5 B/s
  const ExecModel em(m, g);
  TimeNs loop = 0;
  for (uint64_t j = 0; j < 40; ++j) loop += em.decode_step_time(1, j);
  EXPECT_NEAR(static_cast<double>(em.decode_steps_time(1, 0, 40)), static_cast<double>(loop), 40.0);
}

TEST(ExecModel, MixedPassReadsWeightsOnce) {
  const ExecModel em(tiny_model(), slow_gpu());
  const PassWork mixed = ExecModel::prefill_work(4, 2) + ExecModel::decode_work(2, 10);
  // tokens 6, logits 3, pairs 30: 14304 + 1920 FLOPs, one overhead.
  EXPECT_EQ(em.pass_time(mixed), 28'608'000 + 3'840'000 + 100'000);
  EXPECT_EQ(em.pass_time(mixed) + 100'000, em.prefill_time(4, 2) + em.decode_step_time(2, 10));
}

TEST(ExecModel, ChunkedPrefillByHand) {
  const ExecModel em(tiny_model(), slow_gpu());
  // Chunks of 3 then 1: (3 after 2) = 15.78 ms, (1 after 5) = 5.796 ms.
  EXPECT_EQ(em.prefill_time(3, 2), 15'780'000);
  EXPECT_EQ(em.prefill_time(1, 5), 5'796'000);
  EXPECT_EQ(em.prefill_time_chunked(4, 2, 3), 15'780'000 + 5'796'000);
  EXPECT_EQ(em.prefill_time_chunked(4, 2, 0), em.prefill_time(4, 2));
  EXPECT_EQ(em.prefill_time_chunked(4, 2, 8), em.prefill_time(4, 2));
}

TEST(ExecModel, RetrievalOverHostLink) {
  const ExecModel em(tiny_model(), slow_gpu());
  EXPECT_EQ(em.retrieval_time(1000), 4'000'000);  // 1000 B at 2.5e5 B/s
  EXPECT_EQ(em.retrieval_time(0), 0);
  EXPECT_EQ(em.retrieval_time(1000, 1e5), 10'000'000);  // a slower source bounds it
  EXPECT_EQ(em.retrieval_time(1000, 1e9), 4'000'000);   // a faster one does not
}

TEST(ExecModel, KvCapacityAfterWeights) {
  const ExecModel em(tiny_model(), slow_gpu());
  // 10,000 bytes of HBM, 90% usable, minus 1352 params x 2 bytes, / 32 bytes per token.
  EXPECT_EQ(em.weight_bytes(), 2704u);
  EXPECT_EQ(em.kv_cache_capacity_tokens(0.9), (9000u - 2704) / 32);
  EXPECT_EQ(em.kv_cache_capacity_tokens(0.1), 0u);
}

}  // namespace
}  // namespace tempo
