// A small seeded generator whose streams are the same on every platform (the standard
// library's distributions are implementation-defined, so workloads do not use them).
#pragma once

#include <cstdint>

namespace tempo {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next();                                 // SplitMix64
  double uniform();                                // [0, 1), 53 bits
  uint64_t uniform_int(uint64_t lo, uint64_t hi);  // inclusive; lo <= hi
  double normal();                                 // standard normal (Box-Muller)
  double exponential(double rate);                 // mean 1 / rate

 private:
  uint64_t state_;
};

}  // namespace tempo
