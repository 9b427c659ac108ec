#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "model/exec_model.h"
#include "model/gpu_spec.h"
#include "model/model_spec.h"

namespace tempo {
namespace {

const char* kTinyModel = R"({
  "name": "tiny", "num_hidden_layers": 2, "hidden_size": 8, "num_attention_heads": 2,
  "num_key_value_heads": 1, "intermediate_size": 16, "vocab_size": 10,
  "dtype": "bfloat16", "max_context_tokens": 64
})";

TEST(ModelSpec, ParsesAndDerivesHeadDim) {
  ModelSpec m;
  std::string err;
  ASSERT_EQ(parse_model_spec(kTinyModel, "tiny.json", &m, &err), 0) << err;
  EXPECT_EQ(m.name, "tiny");
  EXPECT_EQ(m.head_dim, 4u);
  EXPECT_EQ(m.weight_bytes, 2u);
  EXPECT_EQ(m.kv_element_bytes, 2u);
  EXPECT_EQ(m.mlp_projections, 3u);
  EXPECT_EQ(m.max_context_tokens, 64u);
  // 2 (K,V) x 2 layers x 1 KV head x 4 dims x 2 bytes.
  EXPECT_EQ(m.kv_bytes_per_token(), 32u);
  // q 8x8 + k,v 2x8x4 + o 8x8 + MLP 3x8x16.
  EXPECT_EQ(m.layer_matmul_params(), 576u);
  EXPECT_EQ(m.forward_weight_params(), 2u * 576 + 10 * 8);
  // + input embedding 80 + norms 2x2x8+8.
  EXPECT_EQ(m.parameter_count(), 1232u + 80 + 40);
}

TEST(ModelSpec, KvCacheDtypeOverridesWeights) {
  std::string text = kTinyModel;
  text.insert(text.rfind('}'), R"(, "kv_cache_dtype": "float8_e4m3fn")");
  ModelSpec m;
  std::string err;
  ASSERT_EQ(parse_model_spec(text, "tiny.json", &m, &err), 0) << err;
  EXPECT_EQ(m.kv_bytes_per_token(), 16u);
  EXPECT_EQ(m.weight_bytes, 2u);
}

struct BadCase {
  const char* edit_key;  // key to replace (nullptr: append `value` as a new member)
  const char* value;     // JSON text of the new value
  const char* message;   // expected error text
};

class ModelSpecRejects : public testing::TestWithParam<BadCase> {};

TEST_P(ModelSpecRejects, NamesFileAndKey) {
  const BadCase& c = GetParam();
  std::string text = kTinyModel;
  if (c.edit_key != nullptr) {
    const std::string k = std::string("\"") + c.edit_key + "\": ";
    const size_t at = text.find(k);
    ASSERT_NE(at, std::string::npos);
    const size_t end = text.find_first_of(",}", at);
    text.replace(at + k.size(), end - at - k.size(), c.value);
  } else {
    text.insert(text.rfind('}'), std::string(", ") + c.value);
  }
  ModelSpec m;
  m.name = "untouched";
  std::string err;
  EXPECT_EQ(parse_model_spec(text, "data/models/tiny.json", &m, &err), -EINVAL);
  EXPECT_EQ(err, c.message);
  EXPECT_EQ(m.name, "untouched");
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ModelSpecRejects,
    testing::Values(
        BadCase{"hidden_size", "\"8\"",
                "data/models/tiny.json: key 'hidden_size': must be an integer"},
        BadCase{"hidden_size", "0", "data/models/tiny.json: key 'hidden_size': must be >= 1"},
        BadCase{"hidden_size", "-8", "data/models/tiny.json: key 'hidden_size': must be >= 1"},
        BadCase{"hidden_size", "8.5",
                "data/models/tiny.json: key 'hidden_size': must be an integer"},
        BadCase{"num_key_value_heads", "3",
                "data/models/tiny.json: key 'num_key_value_heads': must divide "
                "num_attention_heads"},
        BadCase{"dtype", "\"int4\"",
                "data/models/tiny.json: key 'dtype': unknown dtype 'int4' (bfloat16, float16, "
                "float32, float8_e4m3fn, float8_e5m2)"},
        BadCase{nullptr, "\"num_kv_heads\": 1",
                "data/models/tiny.json: key 'num_kv_heads': unknown key"},
        BadCase{nullptr, "\"tie_word_embeddings\": 1",
                "data/models/tiny.json: key 'tie_word_embeddings': must be true or false"}));

TEST(ModelSpec, MissingKeyAndBadJson) {
  ModelSpec m;
  std::string err;
  EXPECT_EQ(parse_model_spec(R"({"name": "x"})", "x.json", &m, &err), -EINVAL);
  EXPECT_EQ(err, "x.json: key 'num_hidden_layers': missing");
  EXPECT_EQ(parse_model_spec("{\"name\": ", "x.json", &m, &err), -EINVAL);
  EXPECT_EQ(err, "x.json: not valid JSON");
  EXPECT_EQ(parse_model_spec("[1, 2]", "x.json", &m, &err), -EINVAL);
  EXPECT_EQ(err, "x.json: top level must be a JSON object");
}

TEST(ModelSpec, HeadDimRequiredWhenNotDerivable) {
  ModelSpec m;
  std::string err;
  const char* text = R"({"name": "odd", "num_hidden_layers": 1, "hidden_size": 10,
    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 8,
    "vocab_size": 4, "dtype": "float16", "max_context_tokens": 8})";
  EXPECT_EQ(parse_model_spec(text, "odd.json", &m, &err), -EINVAL);
  EXPECT_EQ(err,
            "odd.json: key 'head_dim': missing, and hidden_size is not a multiple of "
            "num_attention_heads");
}

TEST(ModelSpec, MissingFileIsENOENT) {
  ModelSpec m;
  std::string err;
  EXPECT_EQ(load_model_spec("/nonexistent/tempo/model.json", &m, &err), -ENOENT);
  EXPECT_EQ(err, "/nonexistent/tempo/model.json: cannot read: No such file or directory");
}

// /dev/zero as a spec used to be read until memory ran out; a directory said "not valid JSON".
TEST(ModelSpec, NonSpecPathsAreRefusedByWhatTheyAre) {
  ModelSpec m;
  GpuSpec g;
  std::string err;
  EXPECT_EQ(load_model_spec("/dev/zero", &m, &err), -EFBIG);
  EXPECT_EQ(err, "/dev/zero: larger than 1 MiB: not a model spec");
  EXPECT_EQ(load_gpu_spec("/", &g, &err), -EISDIR);
  EXPECT_EQ(err, "/: cannot read: Is a directory");
}

const char* kGpu = R"({"name": "g", "peak_dense_tflops": 1, "hbm_bandwidth_gbps": 2,
  "host_link_bandwidth_gbps": 3, "hbm_capacity_gb": 4, "compute_efficiency": 0.5,
  "hbm_efficiency": 0.25, "host_link_efficiency": 1, "iteration_overhead_us": 0})";

TEST(GpuSpec, ParsesAndDerates) {
  GpuSpec g;
  std::string err;
  ASSERT_EQ(parse_gpu_spec(kGpu, "g.json", &g, &err), 0) << err;
  EXPECT_EQ(g.effective_flops(), 0.5e12);
  EXPECT_EQ(g.effective_hbm_bps(), 0.5e9);
  EXPECT_EQ(g.effective_host_link_bps(), 3e9);
  EXPECT_EQ(g.hbm_capacity_gb, 4.0);
  EXPECT_EQ(g.iteration_overhead_us, 0.0);
}

TEST(GpuSpec, RejectsOutOfRangeEfficiencyAndNegativeValues) {
  GpuSpec g;
  std::string err;
  std::string text = kGpu;
  text.replace(text.find("0.25"), 4, "1.5");
  EXPECT_EQ(parse_gpu_spec(text, "g.json", &g, &err), -EINVAL);
  EXPECT_EQ(err, "g.json: key 'hbm_efficiency': must be in (0, 1]");

  text = kGpu;
  text.replace(text.find("\"iteration_overhead_us\": 0"), 26, "\"iteration_overhead_us\": -1");
  EXPECT_EQ(parse_gpu_spec(text, "g.json", &g, &err), -EINVAL);
  EXPECT_EQ(err, "g.json: key 'iteration_overhead_us': must be a finite number >= 0");

  text = kGpu;
  text.replace(text.find("\"peak_dense_tflops\": 1"), 22, "\"peak_dense_tflops\": 0");
  EXPECT_EQ(parse_gpu_spec(text, "g.json", &g, &err), -EINVAL);
  EXPECT_EQ(err, "g.json: key 'peak_dense_tflops': must be > 0");

  EXPECT_EQ(parse_gpu_spec(R"({"name": "g"})", "g.json", &g, &err), -EINVAL);
  EXPECT_EQ(err, "g.json: key 'peak_dense_tflops': missing");
}

// The shipped definitions: KV sizes the project depends on, and the published parameter
// counts of both checkpoints (a check that the shapes were transcribed correctly).
TEST(ShippedDefinitions, LlamaAndQwenOnH100) {
  ExecModel llama, qwen;
  std::string err;
  ASSERT_EQ(load_exec_model("llama-3.1-8b-instruct", "h100-pcie-80gb", &llama, &err), 0) << err;
  ASSERT_EQ(load_exec_model("qwen2.5-14b-instruct", "h100-pcie-80gb", &qwen, &err), 0) << err;
  EXPECT_EQ(llama.kv_bytes_per_token(), 128u * 1024);
  EXPECT_EQ(qwen.kv_bytes_per_token(), 192u * 1024);
  EXPECT_EQ(llama.model().parameter_count(), 8'030'261'248u);
  EXPECT_EQ(qwen.model().parameter_count(), 14'770'033'664u);
  EXPECT_EQ(llama.gpu().peak_tflops, 756.0);
  EXPECT_EQ(llama.gpu().hbm_bandwidth_gbps, 2000.0);
  // A 64k-token Llama prefix is the paper's 8 GiB example (Figure 1).
  EXPECT_EQ(65536 * llama.kv_bytes_per_token(), 8ull << 30);
}

TEST(ShippedDefinitions, UnknownNameNamesThePath) {
  ExecModel m;
  std::string err;
  EXPECT_EQ(load_exec_model("no-such-model", "h100-pcie-80gb", &m, &err, "/tmp/tempo-none"),
            -ENOENT);
  EXPECT_EQ(err,
            "/tmp/tempo-none/models/no-such-model.json: cannot read: No such file or directory");
}

}  // namespace
}  // namespace tempo
