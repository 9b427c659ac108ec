#include "store/checksum.h"

#include <xxhash.h>

namespace tempo {

uint64_t checksum64(const void* data, size_t len) { return XXH3_64bits(data, len); }

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

void Checksum64Stream::update(const void* data, size_t len) {
  XXH3_64bits_update(state_->xxh, data, len);
}

uint64_t Checksum64Stream::digest() const { return XXH3_64bits_digest(state_->xxh); }

}  // namespace tempo
