// Heap memory aligned for O_DIRECT transfers.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>

namespace tempo {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<std::byte[], FreeDeleter>;

// nullptr when out of memory.
inline AlignedBuffer make_aligned_buffer(size_t bytes, size_t alignment = 4096) {
  void* p = nullptr;
  if (posix_memalign(&p, alignment, bytes) != 0) return nullptr;
  return AlignedBuffer(static_cast<std::byte*>(p));
}

}  // namespace tempo
