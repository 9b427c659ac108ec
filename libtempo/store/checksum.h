// Object and catalog-record checksums: XXH3-64 (libxxhash).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tempo {

uint64_t checksum64(const void* data, size_t len);

}  // namespace tempo
