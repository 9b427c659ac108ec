#include "store/catalog_record.h"

#include <cstring>

#include "store/checksum.h"

namespace tempo {
namespace {

// The project targets little-endian hosts (x86-64, aarch64); memcpy keeps it alias-safe.
template <typename T>
void put(std::span<uint8_t, kCatalogRecordSize> out, size_t at, T v) {
  std::memcpy(out.data() + at, &v, sizeof(T));
}

template <typename T>
T get(std::span<const uint8_t, kCatalogRecordSize> in, size_t at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof(T));
  return v;
}

constexpr size_t kKeyCheckSpan = 16;
constexpr size_t kRecordCheckSpan = 56;

}  // namespace

void encode_record(const CatalogRecord& r, std::span<uint8_t, kCatalogRecordSize> out) {
  std::memset(out.data(), 0, out.size());
  put<uint32_t>(out, 0, kCatalogMagic);
  put<uint8_t>(out, 4, static_cast<uint8_t>(r.type));
  put<uint8_t>(out, 5, kCatalogVersion);
  put<uint64_t>(out, 8, r.key);
  put<uint64_t>(out, 16, r.seq);
  put<uint64_t>(out, 24, r.offset);
  put<uint64_t>(out, 32, r.size);
  put<uint64_t>(out, 40, r.checksum);
  put<uint64_t>(out, 48, checksum64(out.data(), kKeyCheckSpan));
  put<uint64_t>(out, 56, checksum64(out.data(), kRecordCheckSpan));
}

DecodedRecord decode_record(std::span<const uint8_t, kCatalogRecordSize> in) {
  DecodedRecord d;
  const auto type = get<uint8_t>(in, 4);
  const bool header_ok = get<uint32_t>(in, 0) == kCatalogMagic &&
                         get<uint8_t>(in, 5) == kCatalogVersion &&
                         (type == static_cast<uint8_t>(RecordType::kPut) ||
                          type == static_cast<uint8_t>(RecordType::kDelete)) &&
                         get<uint16_t>(in, 6) == 0;
  const bool key_ok = get<uint64_t>(in, 48) == checksum64(in.data(), kKeyCheckSpan);
  const bool record_ok = get<uint64_t>(in, 56) == checksum64(in.data(), kRecordCheckSpan);
  d.record.type = static_cast<RecordType>(type);
  d.record.key = get<uint64_t>(in, 8);
  d.record.seq = get<uint64_t>(in, 16);
  d.record.offset = get<uint64_t>(in, 24);
  d.record.size = get<uint64_t>(in, 32);
  d.record.checksum = get<uint64_t>(in, 40);
  const bool in_limits = d.record.seq < kCatalogSeqLimit &&
                         (d.record.type != RecordType::kPut ||
                          (d.record.size > 0 && d.record.size <= kCatalogMaxExtent &&
                           d.record.offset <= kCatalogMaxExtent));
  if (header_ok && key_ok && record_ok && in_limits)
    d.state = RecordState::kValid;
  else if (key_ok && get<uint32_t>(in, 0) == kCatalogMagic)
    d.state = RecordState::kDamagedKnownKey;
  else
    d.state = RecordState::kDamaged;
  return d;
}

}  // namespace tempo
