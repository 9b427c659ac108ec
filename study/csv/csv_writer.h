// The one CSV writer of the study's and the tools' outputs (RFC 4180): fields separated by
// commas, a text field quoted when it holds a comma, a quote or a line break (its quotes
// doubled), numbers as the stream formats them at the writer's precision. CsvFile is one
// on a file that reports a failed write, the last buffered bytes included (a full disk
// loses nothing silently).
#pragma once

#include <cstdint>
#include <fstream>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace tempo {

// A text field as CSV writes it: as is, or quoted with its quotes doubled.
std::string csv_quote(std::string_view field);

class CsvWriter {
 public:
  // Digits of a double: every digit (read back exactly), or the stream's default six.
  enum class Doubles : uint8_t { kExact, kSix };
  explicit CsvWriter(std::ostream& out, Doubles doubles = Doubles::kExact);

  // One field of the current row.
  CsvWriter& operator<<(std::string_view text);
  CsvWriter& operator<<(const std::string& text) { return *this << std::string_view(text); }
  CsvWriter& operator<<(const char* text) { return *this << std::string_view(text); }
  template <typename T>
  requires std::is_arithmetic_v<T> CsvWriter& operator<<(T number) {
    separate();
    out_ << number;
    return *this;
  }
  // Every field of `fields`.
  CsvWriter& cells(std::span<const std::string> fields);
  // Ends the row.
  CsvWriter& end_row();

 private:
  void separate();
  std::ostream& out_;
  bool row_started_ = false;
};

class CsvFile {
 public:
  explicit CsvFile(const std::string& path,
                   CsvWriter::Doubles doubles = CsvWriter::Doubles::kExact);
  // Whether the file could be opened.
  bool is_open() const { return file_.is_open(); }
  CsvWriter& csv() { return csv_; }
  // Closes the file: 0, or -EIO when a write failed (or the last buffered bytes did).
  int close();

 private:
  std::ofstream file_;
  CsvWriter csv_;
};

}  // namespace tempo
