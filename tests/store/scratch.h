// What the tests on real files share, without liburing (the C ABI's and the stack's suites
// use it too): a scratch directory on the build's file system (O_DIRECT needs a real disk;
// tmpfs refuses it) and object contents that are a pure function of (key, size).
#pragma once

#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tempo::test {

class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::filesystem::current_path() / "scratch-XXXXXX").string();
    path_ = mkdtemp(tmpl.data()) != nullptr ? tmpl : std::string();
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

inline void fill_object(uint64_t key, std::byte* out, size_t size) {
  for (size_t i = 0; i < size; ++i)
    out[i] = static_cast<std::byte>(splitmix64(key * 0x100000001b3ULL + i / 8) >> (8 * (i % 8)));
}

inline std::vector<std::byte> object_bytes(uint64_t key, size_t size) {
  std::vector<std::byte> v(size);
  fill_object(key, v.data(), size);
  return v;
}

}  // namespace tempo::test
