// What the C ABI's sources share: the claim surface behind a tempo_ctx handle, and the one
// exception fence every entry point runs inside (nothing throws across extern "C").
#pragma once

#include <cerrno>
#include <new>
#include <string>

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

}  // namespace tempo_capi
