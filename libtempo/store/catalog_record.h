// The catalog log's on-disk record: 64 bytes, little-endian, appended in order.
//
//   0  u32 magic "TKVC"      8  u64 key        24 u64 offset   40 u64 data checksum
//   4  u8 type, u8 version   16 u64 sequence   32 u64 size     48 u64 key check
//   6  u16 reserved (0)                                        56 u64 record check
//
// The record check (XXH3 of bytes 0..55) decides validity. The key check (XXH3 of bytes
// 0..15) lets replay name the object a damaged record belonged to, so only that object is
// quarantined; fixed-size framing lets replay continue after a damaged record.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "core/object.h"

namespace tempo {

inline constexpr uint32_t kCatalogMagic = 0x43564b54;  // "TKVC"
inline constexpr uint8_t kCatalogVersion = 1;
inline constexpr size_t kCatalogRecordSize = 64;
// A record is valid only within these limits, so replay's arithmetic cannot wrap: sequences
// below 2^63 (a store refuses a put or remove past it), extents below 2^62 bytes.
inline constexpr uint64_t kCatalogSeqLimit = uint64_t{1} << 63;
inline constexpr uint64_t kCatalogMaxExtent = uint64_t{1} << 62;

enum class RecordType : uint8_t { kPut = 1, kDelete = 2 };

struct CatalogRecord {
  RecordType type = RecordType::kPut;
  ObjectKey key = 0;
  uint64_t seq = 0;
  uint64_t offset = 0;    // kPut: extent in the data file
  uint64_t size = 0;      // kPut: object bytes (the extent is rounded up to the block size)
  uint64_t checksum = 0;  // kPut: XXH3-64 of the object's bytes
};

void encode_record(const CatalogRecord& r, std::span<uint8_t, kCatalogRecordSize> out);

enum class RecordState : uint8_t {
  kValid,
  kDamagedKnownKey,  // record check failed (or a field is out of its limits), key check
                     // passed: `key` names the object
  kDamaged,          // nothing in it can be trusted
};

struct DecodedRecord {
  RecordState state = RecordState::kDamaged;
  CatalogRecord record;
};

DecodedRecord decode_record(std::span<const uint8_t, kCatalogRecordSize> in);

}  // namespace tempo
