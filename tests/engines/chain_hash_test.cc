#include "keys/chain_hash.h"

#include <gtest/gtest.h>

#include <numeric>
#include <set>
#include <vector>

namespace tempo {
namespace {

std::vector<uint32_t> tokens(size_t n, uint32_t first = 1) {
  std::vector<uint32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

const KeyNamespace kLlama{"meta-llama/Llama-3.1-8B-Instruct", "bfloat16", 0, 1};

TEST(ChainHash, KeysNamePrefixes) {
  const uint64_t seed = key_namespace_seed(kLlama);
  const auto t = tokens(1000);
  std::vector<uint64_t> all(3), head(1), tail(2);
  EXPECT_EQ(chain_keys(seed, t, 256, all.data()), 3u);  // 232 trailing tokens have no key
  EXPECT_EQ(chain_keys(seed, std::span(t).first(256), 256, head.data()), 1u);
  EXPECT_EQ(head[0], all[0]);
  // Extending a chain from its last key gives the same keys as hashing it whole.
  EXPECT_EQ(chain_keys(all[0], std::span(t).subspan(256), 256, tail.data()), 2u);
  EXPECT_EQ(tail[0], all[1]);
  EXPECT_EQ(tail[1], all[2]);
  // A change in chunk 0 changes every later key; a change in chunk 2 only chunk 2's.
  auto t0 = t;
  t0[5] ^= 1;
  std::vector<uint64_t> k0(3);
  chain_keys(seed, t0, 256, k0.data());
  for (int i = 0; i < 3; ++i) EXPECT_NE(k0[i], all[i]);
  auto t2 = t;
  t2[600] ^= 1;
  chain_keys(seed, t2, 256, k0.data());
  EXPECT_EQ(k0[0], all[0]);
  EXPECT_EQ(k0[1], all[1]);
  EXPECT_NE(k0[2], all[2]);
}

TEST(ChainHash, NamespacesAndLayerGroupsNeverShareKeys) {
  const auto t = tokens(256);
  std::set<uint64_t> seen;
  for (const KeyNamespace& ns :
       {kLlama, KeyNamespace{"Qwen/Qwen2.5-14B-Instruct", "bfloat16", 0, 1},
        KeyNamespace{kLlama.model, "float16", 0, 1}, KeyNamespace{kLlama.model, "bfloat16", 0, 2},
        KeyNamespace{kLlama.model, "bfloat16", 1, 2}, KeyNamespace{"ab", "c", 0, 1},
        KeyNamespace{"a", "bc", 0, 1}}) {
    const uint64_t key = chain_step(key_namespace_seed(ns), t);
    EXPECT_TRUE(seen.insert(key).second);
    for (uint32_t g = 0; g < 4; ++g) EXPECT_TRUE(seen.insert(layer_group_key(key, g)).second);
  }
  EXPECT_EQ(seen.size(), 35u);
}

// Keys live in stores across releases: the scheme is pinned to these values.
TEST(ChainHash, SchemeIsStable) {
  const uint64_t seed = key_namespace_seed(kLlama);
  const auto t = tokens(16);
  std::vector<uint64_t> k(1);
  chain_keys(seed, t, 16, k.data());
  EXPECT_EQ(seed, 0x3fe90410f825b92bull);
  EXPECT_EQ(k[0], 0xa1aecfbbd6b9acb6ull);
  EXPECT_EQ(layer_group_key(k[0], 3), 0x694ae2121fadb311ull);
}

}  // namespace
}  // namespace tempo
