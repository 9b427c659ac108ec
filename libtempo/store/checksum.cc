#include "store/checksum.h"

#include <xxhash.h>

namespace tempo {

uint64_t checksum64(const void* data, size_t len) { return XXH3_64bits(data, len); }

}  // namespace tempo
