#include "store/catalog_record.h"

#include <gtest/gtest.h>

#include <array>

namespace tempo {
namespace {

TEST(CatalogRecord, RoundTripsEveryField) {
  const CatalogRecord in{RecordType::kPut, 0x1122334455667788ULL, 42, 8192, 5000, 0xabcdefULL};
  std::array<uint8_t, kCatalogRecordSize> buf{};
  encode_record(in, buf);
  const DecodedRecord d = decode_record(buf);
  ASSERT_EQ(d.state, RecordState::kValid);
  EXPECT_EQ(d.record.type, RecordType::kPut);
  EXPECT_EQ(d.record.key, in.key);
  EXPECT_EQ(d.record.seq, 42u);
  EXPECT_EQ(d.record.offset, 8192u);
  EXPECT_EQ(d.record.size, 5000u);
  EXPECT_EQ(d.record.checksum, 0xabcdefULL);
}

TEST(CatalogRecord, DamageAfterTheKeyStillNamesTheObject) {
  std::array<uint8_t, kCatalogRecordSize> buf{};
  encode_record(CatalogRecord{RecordType::kDelete, 77, 3, 0, 0, 0}, buf);
  buf[30] ^= 0x10;  // inside the offset field
  const DecodedRecord d = decode_record(buf);
  EXPECT_EQ(d.state, RecordState::kDamagedKnownKey);
  EXPECT_EQ(d.record.key, 77u);
}

TEST(CatalogRecord, DamageToTheKeyLeavesNothingTrusted) {
  std::array<uint8_t, kCatalogRecordSize> buf{};
  encode_record(CatalogRecord{RecordType::kPut, 77, 3, 4096, 10, 9}, buf);
  buf[9] ^= 0x01;  // inside the key
  EXPECT_EQ(decode_record(buf).state, RecordState::kDamaged);
  std::array<uint8_t, kCatalogRecordSize> zeros{};
  EXPECT_EQ(decode_record(zeros).state, RecordState::kDamaged);
}

// Fields past their limits are refused even under a good checksum (a crafted record): a
// sequence of 2^64-1 would wrap the next put's to 0, an extent near 2^64 its end.
TEST(CatalogRecord, FieldsPastTheirLimitsAreNotValid) {
  std::array<uint8_t, kCatalogRecordSize> buf{};
  const auto state = [&](CatalogRecord r) {
    encode_record(r, buf);
    return decode_record(buf).state;
  };
  EXPECT_EQ(state({RecordType::kPut, 7, kCatalogSeqLimit - 1, 0, 1, 0}), RecordState::kValid);
  EXPECT_EQ(state({RecordType::kPut, 7, UINT64_MAX, 0, 1, 0}), RecordState::kDamagedKnownKey);
  EXPECT_EQ(state({RecordType::kDelete, 7, kCatalogSeqLimit, 0, 0, 0}),
            RecordState::kDamagedKnownKey);
  EXPECT_EQ(state({RecordType::kPut, 7, 1, kCatalogMaxExtent, kCatalogMaxExtent, 0}),
            RecordState::kValid);
  EXPECT_EQ(state({RecordType::kPut, 7, 1, UINT64_MAX - 4095, 1, 0}),
            RecordState::kDamagedKnownKey);
  EXPECT_EQ(state({RecordType::kPut, 7, 1, 0, kCatalogMaxExtent + 1, 0}),
            RecordState::kDamagedKnownKey);
  EXPECT_EQ(state({RecordType::kPut, 7, 1, 0, 0, 0}), RecordState::kDamagedKnownKey);
}

}  // namespace
}  // namespace tempo
