#include "placement/hardware.h"

#include <gtest/gtest.h>

#include "placement/physical_study.h"

#include <cerrno>
#include <cstdio>
#include <fstream>

namespace tempo::placement {
namespace {

TEST(PhysicalShape, LlamaOnAnH100PcieShare) {
  ExecModel m;
  std::string err;
  ASSERT_EQ(load_exec_model("llama-3.1-8b-instruct", "h100-pcie-80gb", &m, &err), 0) << err;
  HostSpec h;
  ASSERT_EQ(load_host_spec("h100-pcie-server", default_data_dir(), &h, &err), 0) << err;
  TierBytes b;
  ASSERT_EQ(physical_tier_bytes(m, h, &b), 0);
  // HBM: 85.5 GB x 0.9 - 8,030,261,248 bf16 parameters (16,060,522,496 bytes) leaves
  // 60,889,477,504 bytes, 464,549 whole tokens of 128 KiB.
  EXPECT_EQ(b.hbm, 464'549ull * 131'072);
  EXPECT_EQ(b.dram, 128'000'000'000ull);
  EXPECT_EQ(b.ssd, 3'840'000'000'000ull);
  const TierShape small = shape_for_bytes(b, 16 * 131'072);  // 2 MiB blocks
  EXPECT_EQ(small.hbm_blocks, 29'034u);
  EXPECT_EQ(small.dram_blocks, 61'035u);
  EXPECT_EQ(small.ssd_blocks, 1'831'054u);
  const TierShape trace = shape_for_bytes(b, 512 * 131'072);  // 64 MiB blocks
  EXPECT_EQ(trace.hbm_blocks, 907u);
  EXPECT_EQ(trace.dram_blocks, 1'907u);
  EXPECT_EQ(trace.ssd_blocks, 57'220u);
}

TEST(PhysicalShape, BadHostFilesAreRefusedWithTheKey) {
  const std::string path = testing::TempDir() + "host_bad.json";
  HostSpec h;
  std::string err;
  for (
      const char* body :
      {R"({"name": "x", "hbm_memory_fraction": 1.5, "dram_kv_gb": 1, "ssd_kv_gb": 1})",
       R"({"name": "x", "hbm_memory_fraction": 0.9, "dram_kv_gb": -1, "ssd_kv_gb": 1})",
       R"({"name": "x", "hbm_memory_fraction": 0.9, "dram_kv_gb": 1, "ssd_kv_gb": 1, "ram": 2})"}) {
    std::ofstream(path) << body;
    EXPECT_EQ(load_host_spec(path, "", &h, &err), -EINVAL) << body;
    EXPECT_NE(err.find(path), std::string::npos) << err;
  }
  EXPECT_EQ(load_host_spec("no-such-host", "/nonexistent", &h, &err), -ENOENT);
  std::remove(path.c_str());
}

TEST(PhysicalStudy, CompulsoryReadsAreFirstUsesThatAreReads) {
  // Request 0 reads 0 and 1 (both new), writes 2, outputs 3; request 1 reads 1 and 2 (seen)
  // and 4 (new); outputs are written, never compulsory reads.
  Workload w;
  w.num_blocks = 6;
  w.requests.push_back({0, 0, {0, 1}, {2}, 16, 16, {3}});
  w.requests.push_back({1, 0, {1, 2, 4}, {}, 0, 16, {5}});
  EXPECT_EQ(compulsory_reads(w), 3u);
  const Workload first = first_requests(w, 1);
  ASSERT_EQ(first.requests.size(), 1u);
  EXPECT_EQ(compulsory_reads(first), 2u);
  EXPECT_EQ(first_requests(w, 9).requests.size(), 2u);
}

}  // namespace
}  // namespace tempo::placement
