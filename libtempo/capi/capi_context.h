// For the C ABI's sources beyond tempo_capi.cc: the context behind a tempo_ctx handle.
#pragma once

#include "tempo/tempo.h"

namespace tempo {
class Context;
}

// The context of a handle (nullptr for a null handle). Defined in tempo_capi.cc.
tempo::Context* tempo_capi_context(tempo_ctx* ctx);
