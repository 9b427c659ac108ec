// The fast tier's memory: a DRAM arena (2 MiB pages when available, bound to a NUMA node
// with libnuma) or a Device-DAX mapping (/dev/daxX.Y, found with libdaxctl, mapped at the
// device's alignment).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace tempo {

struct FastTierOptions {
  std::string kind = "dram";      // "dram" or "dax"
  uint64_t bytes = 100ull << 30;  // dram: arena size (rounded up to 2 MiB); dax: 0 = whole device
  int numa_node = -1;             // dram: bind to this node; -1 leaves the process policy
  bool huge_pages = true;         // dram: hugetlb pages if reserved, else transparent huge pages
  bool prefault = true;           // touch every page now so staging never takes page faults
  std::string dax_path = "auto";  // dax: a /dev/daxX.Y path, or "auto" for the first one
  bool shareable = false;  // dram: back the arena with a memfd another process can map (tempod)
  friend bool operator==(const FastTierOptions&, const FastTierOptions&) = default;
};

enum class PageKind : uint8_t { kBase, kTransparentHuge, kHugetlb, kDax };
const char* page_kind_name(PageKind k);

class FastTierRegion {
 public:
  // 0, or a negative errno with `error` saying why (-ENODEV: no DAX device found,
  // -EINVAL: bad options or NUMA node, -ENOMEM: a DRAM tier larger than the memory that can
  // back it, MemAvailable or the cgroup's memory.max, or a failed mapping).
  static int create(const FastTierOptions& options, std::unique_ptr<FastTierRegion>* out,
                    std::string* error);
  ~FastTierRegion();
  FastTierRegion(const FastTierRegion&) = delete;
  FastTierRegion& operator=(const FastTierRegion&) = delete;

  std::byte* base() const { return base_; }
  uint64_t size() const { return size_; }
  uint64_t alignment() const { return alignment_; }  // page size backing the region
  PageKind pages() const { return pages_; }
  int numa_node() const { return numa_node_; }
  const std::string& source() const { return source_; }  // "dram" or the DAX device path
  // What another process maps to see the region: the DAX device, or the shareable arena's
  // memfd; -1 for a private arena. Owned by the region.
  int fd() const { return fd_; }

 private:
  FastTierRegion() = default;
  int map_dram(const FastTierOptions& o, std::string* error);
  int map_dax(const FastTierOptions& o, std::string* error);
  int map_memfd(const FastTierOptions& o);
  bool map_hugetlb(int flags, int fd);

  std::byte* base_ = nullptr;
  uint64_t size_ = 0;
  void* mapping_ = nullptr;  // what to munmap (may start before base_)
  uint64_t mapping_size_ = 0;
  uint64_t alignment_ = 4096;
  PageKind pages_ = PageKind::kBase;
  int numa_node_ = -1;
  int fd_ = -1;  // the DAX device or the shareable arena's memfd
  std::string source_;
};

}  // namespace tempo
