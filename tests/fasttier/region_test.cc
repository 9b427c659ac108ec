#include "fasttier/region.h"

#include <gtest/gtest.h>
#include <numa.h>
#include <numaif.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>

#include "fasttier/fast_tier.h"

namespace tempo {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

// AnonHugePages (kB) of the mapping that contains `addr`, from /proc/self/smaps.
long anon_huge_kb(const void* addr) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in = false;
  const auto a = reinterpret_cast<uintptr_t>(addr);
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > 8) {
      in = a >= lo && a < hi;
      continue;
    }
    if (in && line.rfind("AnonHugePages:", 0) == 0) return std::stol(line.substr(14));
  }
  return -1;
}

std::string thp_mode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(f, s);
  return s;
}

TEST(FastTierRegion, DramArenaIsHugePageAlignedUsableMemory) {
  FastTierOptions o;
  o.bytes = 63 * kMiB;
  std::unique_ptr<FastTierRegion> r;
  std::string err;
  ASSERT_EQ(FastTierRegion::create(o, &r, &err), 0) << err;
  EXPECT_EQ(r->size(), 64 * kMiB);  // rounded up to 2 MiB pages
  EXPECT_EQ(reinterpret_cast<uintptr_t>(r->base()) % (2 * kMiB), 0u);
  EXPECT_EQ(r->source(), "dram");
  ASSERT_NE(r->pages(), PageKind::kBase);
  EXPECT_EQ(r->alignment(), 2 * kMiB);
  r->base()[r->size() - 1] = std::byte{0x5a};
  EXPECT_EQ(r->base()[r->size() - 1], std::byte{0x5a});
  if (r->pages() == PageKind::kTransparentHuge) {
    if (thp_mode().find("[never]") != std::string::npos) GTEST_SKIP() << "THP disabled";
    EXPECT_GT(anon_huge_kb(r->base()), 0) << "prefaulted arena got no transparent huge pages";
  }
}

TEST(FastTierRegion, BaseOnlyPagesWhenAsked) {
  FastTierOptions o;
  o.bytes = 4 * kMiB;
  o.huge_pages = false;
  std::unique_ptr<FastTierRegion> r;
  std::string err;
  ASSERT_EQ(FastTierRegion::create(o, &r, &err), 0) << err;
  EXPECT_EQ(r->pages(), PageKind::kBase);
  EXPECT_STREQ(page_kind_name(r->pages()), "4k");
}

TEST(FastTierRegion, BindsToTheRequestedNumaNode) {
  if (numa_available() < 0) GTEST_SKIP() << "no NUMA support in this kernel";
  FastTierOptions o;
  o.bytes = 8 * kMiB;
  o.numa_node = 0;
  std::unique_ptr<FastTierRegion> r;
  std::string err;
  ASSERT_EQ(FastTierRegion::create(o, &r, &err), 0) << err;
  EXPECT_EQ(r->numa_node(), 0);
  for (uint64_t off = 0; off < r->size(); off += 2 * kMiB) {
    int node = -1;
    ASSERT_EQ(get_mempolicy(&node, nullptr, 0, r->base() + off, MPOL_F_NODE | MPOL_F_ADDR), 0);
    EXPECT_EQ(node, 0);
  }
  o.numa_node = 4096;
  EXPECT_EQ(FastTierRegion::create(o, &r, &err), -EINVAL);
  EXPECT_NE(err.find("NUMA node 4096 does not exist"), std::string::npos);
}

TEST(FastTierRegion, BadOptionsAndMissingDaxDevicesAreClearErrors) {
  std::unique_ptr<FastTierRegion> r;
  std::string err;
  FastTierOptions o;
  o.bytes = 0;
  EXPECT_EQ(FastTierRegion::create(o, &r, &err), -EINVAL);  // no size
  o.kind = "pmem";
  o.bytes = kMiB;
  EXPECT_EQ(FastTierRegion::create(o, &r, &err), -EINVAL);
  EXPECT_NE(err.find("\"pmem\""), std::string::npos);
  o.kind = "dax";
  o.dax_path = "/dev/dax97.3";
  EXPECT_EQ(FastTierRegion::create(o, &r, &err), -ENODEV);
  EXPECT_EQ(err, "/dev/dax97.3 is not an enabled Device-DAX device");
  o.dax_path = "auto";
  o.bytes = 0;
  const int ret = FastTierRegion::create(o, &r, &err);
  if (ret == -ENODEV) {
    EXPECT_EQ(err, "no enabled Device-DAX device found (libdaxctl)");
  } else {
    // A host with Device-DAX: the mapping honours the device's alignment.
    ASSERT_EQ(ret, 0) << err;
    EXPECT_EQ(r->pages(), PageKind::kDax);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(r->base()) % r->alignment(), 0u);
    EXPECT_EQ(r->size() % r->alignment(), 0u);
  }
}

TEST(FastTier, PlacesObjectsAndReportsFragmentation) {
  FastTierOptions o;
  o.bytes = 2 * kMiB;
  std::unique_ptr<FastTier> t;
  std::string err;
  ASSERT_EQ(FastTier::create(o, &t, &err), 0) << err;
  std::vector<Extent> a, b, c;
  ASSERT_EQ(t->allocate(kMiB, &a), 0);
  ASSERT_EQ(t->allocate(kMiB - 4096, &b), 0);
  EXPECT_EQ(t->allocate(8192, &c), -ENOSPC);
  t->release(kMiB, a);
  ASSERT_EQ(t->allocate(kMiB + 100, &c), 0);  // the 1 MiB hole plus the 4 KiB one
  EXPECT_EQ(c.size(), 2u);
  const FastTierStats s = t->stats();
  EXPECT_EQ(s.objects, 2u);
  EXPECT_EQ(s.object_extents, 3u);
  EXPECT_EQ(s.slack_bytes, 4096u - 100u);
  EXPECT_EQ(s.space.free_bytes, 0u);
  EXPECT_EQ(t->footprint(1), 4096u);
}

}  // namespace
}  // namespace tempo
