// What the C ABI's sources share: the claim surface behind a tempo_ctx handle, and the one
// exception fence every entry point runs inside (nothing throws across extern "C").
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "tempo/tempo.h"

namespace tempo {
class ClaimSurface;
}  // namespace tempo

// The claim surface of a handle (nullptr for a null handle). Defined in tempo_capi.cc.
tempo::ClaimSurface* tempo_capi_surface(tempo_ctx* ctx);
// A line to the context's log function (tempo_ctx_set_log_fn), if it has one; a syslog
// priority. Defined in tempo_capi.cc.
void tempo_capi_log(tempo_ctx* ctx, int priority, const std::string& message);

namespace tempo_capi {

// Runs `f` and returns its result; -ENOMEM when memory ran out, -EIO for anything else
// thrown (a defect, reported rather than crossing into C).
template <typename F>
int guard(F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return -ENOMEM;
  } catch (...) {
    return -EIO;
  }
}

// A caller's array of elements of `stride` bytes as this library's T: -EINVAL a stride below
// sizeof(T) or above TEMPO_STRUCT_SIZE_MAX, or an element's bytes beyond the T this library
// knows that are not zero (a field a later minor added, which this one cannot honour).
template <typename T>
int read_strided(const void* array, size_t count, size_t stride, std::vector<T>* out) {
  if (stride < sizeof(T) || stride > TEMPO_STRUCT_SIZE_MAX) return -EINVAL;
  out->resize(count);
  const auto* base = static_cast<const unsigned char*>(array);
  for (size_t i = 0; i < count; ++i) {
    const unsigned char* e = base + i * stride;
    if (std::any_of(e + sizeof(T), e + stride, [](unsigned char b) { return b != 0; }))
      return -EINVAL;
    std::memcpy(&(*out)[i], e, sizeof(T));
  }
  return 0;
}

}  // namespace tempo_capi
