// For the C ABI's sources beyond tempo_capi.cc: the context behind a tempo_ctx handle.
#pragma once

#include <string>

#include "tempo/tempo.h"

namespace tempo {
class Context;
}

// The context of a handle (nullptr for a null handle). Both defined in tempo_capi.cc.
tempo::Context* tempo_capi_context(tempo_ctx* ctx);
// Sends a line to the handle's log function (syslog priority), if one is set.
void tempo_capi_log(tempo_ctx* ctx, int priority, const std::string& message);
