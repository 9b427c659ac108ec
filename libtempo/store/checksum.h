// Object and catalog-record checksums: XXH3-64 (libxxhash, vectorised for this CPU at run
// time on x86-64).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tempo {

uint64_t checksum64(const void* data, size_t len);

// The same checksum over data that arrives in pieces (an object placed in several extents).
class Checksum64Stream {
 public:
  Checksum64Stream();
  ~Checksum64Stream();
  Checksum64Stream(const Checksum64Stream&) = delete;
  Checksum64Stream& operator=(const Checksum64Stream&) = delete;
  void update(const void* data, size_t len);
  uint64_t digest() const;

 private:
  struct State;
  State* state_;
};

}  // namespace tempo
