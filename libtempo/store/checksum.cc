#include "store/checksum.h"

#include <xxhash.h>
#if defined(__x86_64__)
#include <xxh_x86dispatch.h>
#endif

namespace tempo {
namespace {

// On x86-64, libxxhash's runtime dispatch: the widest vector unit this CPU has (SSE2, AVX2,
// AVX-512), the same XXH3-64 values as the portable entry points.
uint64_t xxh3(const void* data, size_t len) {
#if defined(__x86_64__)
  return XXH3_64bits_dispatch(data, len);
#else
  return XXH3_64bits(data, len);
#endif
}

void xxh3_update(XXH3_state_t* state, const void* data, size_t len) {
#if defined(__x86_64__)
  XXH3_64bits_update_dispatch(state, data, len);
#else
  XXH3_64bits_update(state, data, len);
#endif
}

}  // namespace

uint64_t checksum64(const void* data, size_t len) { return xxh3(data, len); }

struct Checksum64Stream::State {
  XXH3_state_t* xxh;
};

Checksum64Stream::Checksum64Stream() : state_(new State{XXH3_createState()}) {
  XXH3_64bits_reset(state_->xxh);
}

Checksum64Stream::~Checksum64Stream() {
  XXH3_freeState(state_->xxh);
  delete state_;
}

void Checksum64Stream::update(const void* data, size_t len) { xxh3_update(state_->xxh, data, len); }

uint64_t Checksum64Stream::digest() const { return XXH3_64bits_digest(state_->xxh); }

}  // namespace tempo
