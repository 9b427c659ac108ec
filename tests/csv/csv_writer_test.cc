// The one CSV writer: what a reader of RFC 4180 reads back, and a failed write reported.
#include "csv/csv_writer.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <sstream>

namespace tempo {
namespace {

TEST(CsvWriter, QuotesTheFieldsThatNeedIt) {
  EXPECT_EQ(csv_quote("plain"), "plain");
  EXPECT_EQ(csv_quote(""), "");
  EXPECT_EQ(csv_quote("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_quote("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_quote("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_quote("cr\r"), "\"cr\r\"");
}

// A trace path with a comma in it was written as two columns of every row.
TEST(CsvWriter, RowsKeepTheirColumns) {
  std::ostringstream out;
  CsvWriter csv(out);
  csv << "workload"
      << "p95_ttft_s";
  csv.end_row();
  csv << "traces/a,b.jsonl" << 0.1 << uint64_t{7} << "";
  csv.end_row();
  EXPECT_EQ(out.str(), "workload,p95_ttft_s\n\"traces/a,b.jsonl\",0.10000000000000001,7,\n");
}

TEST(CsvWriter, SixDigitsAsTheStreamsDefault) {
  std::ostringstream out;
  CsvWriter csv(out, CsvWriter::Doubles::kSix);
  csv << 0.1 << 2.0 << 1e6;
  csv.end_row();
  EXPECT_EQ(out.str(), "0.1,2,1e+06\n");
}

// On a full disk the last buffered bytes fail only when the file is closed.
TEST(CsvFile, AFullDiskIsAnError) {
  CsvFile file("/dev/full");
  ASSERT_TRUE(file.is_open());
  file.csv() << "a" << 1;
  file.csv().end_row();
  EXPECT_EQ(file.close(), -EIO);
  CsvFile missing("/nonexistent-dir/x.csv");
  EXPECT_FALSE(missing.is_open());
}

}  // namespace
}  // namespace tempo
