// libFuzzer target: the object store's catalog record decoder (store/catalog_record.h), fed
// the 64-byte records replay reads from disk. A record decodes as valid only if encoding
// what it holds gives back the same bytes, and every valid record keeps the documented
// field limits (sequence below kCatalogSeqLimit, extents that cannot wrap).
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "store/catalog_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (size_t at = 0; at + tempo::kCatalogRecordSize <= size; at += tempo::kCatalogRecordSize) {
    const std::span<const uint8_t, tempo::kCatalogRecordSize> in(data + at,
                                                                 tempo::kCatalogRecordSize);
    const tempo::DecodedRecord d = tempo::decode_record(in);
    if (d.state != tempo::RecordState::kValid) continue;
    std::array<uint8_t, tempo::kCatalogRecordSize> again{};
    tempo::encode_record(d.record, again);
    if (std::memcmp(again.data(), in.data(), again.size()) != 0) __builtin_trap();
    const tempo::CatalogRecord& r = d.record;
    if (r.seq >= tempo::kCatalogSeqLimit) __builtin_trap();
    if (r.type == tempo::RecordType::kPut &&
        (r.size == 0 || r.size > tempo::kCatalogMaxExtent || r.offset > tempo::kCatalogMaxExtent))
      __builtin_trap();
  }
  return 0;
}
