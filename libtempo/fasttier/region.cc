#include "fasttier/region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>

// libdaxctl and libnuma are optional (cmake/TempoOptionalDeps.cmake).
#ifndef TEMPO_WITHOUT_DAXCTL
#include <daxctl/libdaxctl.h>
#endif
#ifndef TEMPO_WITHOUT_NUMA
#include <numa.h>
#endif

namespace tempo {
namespace {

constexpr uint64_t kHugePage = 2ull << 20;

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// The first number in the file (the value of `key` when given: "MemAvailable:  123 kB").
std::optional<uint64_t> read_number(const std::string& path, const std::string& key = "") {
  std::ifstream in(path);
  std::string word;
  while (in >> word) {
    if (!key.empty() && word != key) continue;
    if (!key.empty() && !(in >> word)) return std::nullopt;
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
    if (ec != std::errc() || end != word.data() + word.size()) return std::nullopt;
    return v;
  }
  return std::nullopt;
}

// Memory a DRAM fast tier can be backed by: MemAvailable, within this process's cgroup
// (v2) limit when it has one. *source says which bound it is.
uint64_t memory_available(std::string* source) {
  uint64_t avail = read_number("/proc/meminfo", "MemAvailable:").value_or(0) * 1024;
  *source = "MemAvailable";
  if (avail == 0) avail = uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE));
  std::ifstream cg("/proc/self/cgroup");
  std::string line;
  while (std::getline(cg, line)) {
    if (!line.starts_with("0::")) continue;
    const std::string dir = "/sys/fs/cgroup" + line.substr(3);
    const auto max = read_number(dir + "/memory.max");  // "max" when unlimited: no number
    const uint64_t used = read_number(dir + "/memory.current").value_or(0);
    if (max && *max > used && *max - used < avail) {
      avail = *max - used;
      *source = "the cgroup's memory.max";
    }
  }
  return avail;
}

// A free address range of `bytes` starting at a multiple of `align`, reserved PROT_NONE.
void* reserve_aligned(uint64_t bytes, uint64_t align, void** mapping, uint64_t* mapping_size) {
  const uint64_t len = bytes + align;
  void* p = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (start + align - 1) & ~(align - 1);
  *mapping = p;
  *mapping_size = len;
  return reinterpret_cast<void*>(aligned);
}

struct DaxCandidate {
  std::string path;
  uint64_t size = 0;
  uint64_t align = 0;
};

// The first enabled Device-DAX device libdaxctl knows, or the one at `want`. -ENODEV when
// there is none, -EOPNOTSUPP when built without libdaxctl.
int find_dax([[maybe_unused]] const std::string& want, [[maybe_unused]] DaxCandidate* out) {
#ifdef TEMPO_WITHOUT_DAXCTL
  return -EOPNOTSUPP;
#else
  daxctl_ctx* ctx = nullptr;
  int ret = daxctl_new(&ctx);
  if (ret < 0) return ret;
  ret = -ENODEV;
  daxctl_region* region;
  daxctl_region_foreach(ctx, region) {
    daxctl_dev* dev;
    daxctl_dev_foreach(region, dev) {
      if (!daxctl_dev_is_enabled(dev)) continue;
      const std::string path = std::string("/dev/") + daxctl_dev_get_devname(dev);
      if (want != "auto" && want != path) continue;
      out->path = path;
      out->size = daxctl_dev_get_size(dev);
      out->align = daxctl_dev_get_align(dev);
      if (out->align == 0) out->align = daxctl_region_get_align(region);
      ret = 0;
      break;
    }
    if (ret == 0) break;
  }
  daxctl_unref(ctx);
  return ret;
#endif
}

// Binds [p, p + bytes) to NUMA node `node`: 0, -EINVAL when there is no such node,
// -EOPNOTSUPP when built without libnuma.
int bind_to_node([[maybe_unused]] void* p, [[maybe_unused]] uint64_t bytes, int node,
                 std::string* error) {
#ifdef TEMPO_WITHOUT_NUMA
  *error = "binding the fast tier to NUMA node " + std::to_string(node) +
           " needs libnuma: libtempo was built without it";
  return -EOPNOTSUPP;
#else
  if (numa_available() < 0 || node > numa_max_node()) {
    *error = "NUMA node " + std::to_string(node) + " does not exist";
    return -EINVAL;
  }
  if (p != nullptr) numa_tonode_memory(p, bytes, node);
  return 0;
#endif
}

}  // namespace

const char* page_kind_name(PageKind k) {
  switch (k) {
    case PageKind::kBase:
      return "4k";
    case PageKind::kTransparentHuge:
      return "thp";
    case PageKind::kHugetlb:
      return "hugetlb";
    case PageKind::kDax:
      return "dax";
  }
  return "?";
}

int FastTierRegion::create(const FastTierOptions& options, std::unique_ptr<FastTierRegion>* out,
                           std::string* error) {
  std::unique_ptr<FastTierRegion> r(new FastTierRegion());
  int ret;
  if (options.kind == "dram") {
    ret = r->map_dram(options, error);
  } else if (options.kind == "dax") {
    ret = r->map_dax(options, error);
  } else {
    *error = "fast tier kind must be \"dram\" or \"dax\", not \"" + options.kind + "\"";
    ret = -EINVAL;
  }
  if (ret < 0) return ret;
  *out = std::move(r);
  return 0;
}

int FastTierRegion::map_dram(const FastTierOptions& o, std::string* error) {
  if (o.bytes == 0) {
    *error = "a DRAM fast tier needs a size";
    return -EINVAL;
  }
  // Checked before mapping anything.
  if (o.numa_node >= 0) {
    if (const int r = bind_to_node(nullptr, 0, o.numa_node, error); r < 0) return r;
  }
  source_ = "dram";
  size_ = round_up(o.bytes, kHugePage);
  // Larger than the memory that can back it, the tier would end in the OOM killer the
  // first time it fills (or at once, prefaulted): refuse it here.
  std::string bound;
  if (const uint64_t avail = memory_available(&bound); size_ > avail) {
    *error = "fast_tier_bytes: " + std::to_string(size_) + " bytes is more than the memory " +
             "that can back it (" + std::to_string(avail) + " bytes, " + bound + ")";
    return -ENOMEM;
  }
  if (o.shareable) {
    if (const int r = map_memfd(o); r != 0) {
      *error = std::string("fast tier memfd: ") + std::strerror(-r);
      return r;
    }
  } else if (o.huge_pages) {
    map_hugetlb(MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1);  // reserved pages first
  }
  if (base_ == nullptr) {
    void* at = reserve_aligned(size_, kHugePage, &mapping_, &mapping_size_);
    if (at == nullptr) return -ENOMEM;
    if (mprotect(at, size_, PROT_READ | PROT_WRITE) != 0) return -errno;
    base_ = static_cast<std::byte*>(at);
    if (o.huge_pages && madvise(at, size_, MADV_HUGEPAGE) == 0) {
      pages_ = PageKind::kTransparentHuge;
      alignment_ = kHugePage;
    }
  }
  if (o.numa_node >= 0) {
    bind_to_node(base_, size_, o.numa_node, error);
    numa_node_ = o.numa_node;
  }
  if (o.prefault) {
    for (uint64_t off = 0; off < size_; off += 4096) base_[off] = std::byte{0};
  }
  return 0;
}

// The whole arena on hugetlb pages (anonymous, or the hugetlb memfd `fd`). Without
// MAP_NORESERVE the mmap fails when the pool is short, instead of a later fault raising
// SIGBUS. False when it failed (nothing is mapped then).
bool FastTierRegion::map_hugetlb(int flags, int fd) {
  void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, flags, fd, 0);
  if (p == MAP_FAILED) return false;
  mapping_ = p;
  mapping_size_ = size_;
  base_ = static_cast<std::byte*>(p);
  pages_ = PageKind::kHugetlb;
  alignment_ = kHugePage;
  return true;
}

// The arena as a memfd (hugetlb pages when reserved), mapped shared at a 2 MiB boundary.
int FastTierRegion::map_memfd(const FastTierOptions& o) {
  fd_ = o.huge_pages ? memfd_create("tempo-fast-tier", MFD_CLOEXEC | MFD_HUGETLB) : -1;
  if (fd_ >= 0 && ftruncate(fd_, static_cast<off_t>(size_)) == 0 && map_hugetlb(MAP_SHARED, fd_))
    return 0;
  if (fd_ >= 0) close(fd_);
  fd_ = memfd_create("tempo-fast-tier", MFD_CLOEXEC);
  if (fd_ < 0 || ftruncate(fd_, static_cast<off_t>(size_)) != 0) return -errno;
  void* at = reserve_aligned(size_, kHugePage, &mapping_, &mapping_size_);
  if (at == nullptr) return -ENOMEM;
  if (mmap(at, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd_, 0) == MAP_FAILED)
    return -errno;
  base_ = static_cast<std::byte*>(at);
  return 0;
}

int FastTierRegion::map_dax(const FastTierOptions& o, std::string* error) {
  DaxCandidate dax;
  int ret = find_dax(o.dax_path, &dax);
  if (ret < 0) {
    *error = ret == -EOPNOTSUPP
                 ? "a Device-DAX fast tier needs libdaxctl: libtempo was built without it"
             : o.dax_path == "auto" ? "no enabled Device-DAX device found (libdaxctl)"
                                    : o.dax_path + " is not an enabled Device-DAX device";
    return ret;
  }
  if (o.bytes > dax.size) {
    *error = dax.path + " holds " + std::to_string(dax.size) + " bytes, fewer than asked";
    return -EINVAL;
  }
  alignment_ = dax.align > 0 ? dax.align : kHugePage;
  size_ = (o.bytes > 0 ? o.bytes : dax.size) / alignment_ * alignment_;
  fd_ = ::open(dax.path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd_ < 0) {
    *error = dax.path + ": " + std::strerror(errno);
    return -errno;
  }
  // Device-DAX refuses mappings not aligned to its page size.
  void* at = reserve_aligned(size_, alignment_, &mapping_, &mapping_size_);
  if (at == nullptr) return -ENOMEM;
  void* p = mmap(at, size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd_, 0);
  if (p == MAP_FAILED) {
    *error = dax.path + ": mmap: " + std::strerror(errno);
    return -errno;
  }
  base_ = static_cast<std::byte*>(p);
  pages_ = PageKind::kDax;
  source_ = dax.path;
  return 0;
}

FastTierRegion::~FastTierRegion() {
  if (mapping_ != nullptr) munmap(mapping_, mapping_size_);
  if (fd_ >= 0) close(fd_);
}

}  // namespace tempo
