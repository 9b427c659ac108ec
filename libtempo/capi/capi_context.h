// For the C ABI's sources beyond tempo_capi.cc: the context behind a tempo_ctx handle.
#pragma once

#include "tempo/tempo.h"

namespace tempo {
class Context;
class DaemonClient;
}  // namespace tempo

// The context of a handle (nullptr for a null handle or a client-mode one). Defined in
// tempo_capi.cc.
tempo::Context* tempo_capi_context(tempo_ctx* ctx);
// The daemon client of a client-mode handle (device = daemon), else nullptr.
tempo::DaemonClient* tempo_capi_client(tempo_ctx* ctx);
