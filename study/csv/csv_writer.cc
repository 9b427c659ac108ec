#include "csv/csv_writer.h"

#include <cerrno>
#include <limits>

namespace tempo {

std::string csv_quote(std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(field);
  std::string out = "\"";
  for (const char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

CsvWriter::CsvWriter(std::ostream& out, Doubles doubles) : out_(out) {
  if (doubles == Doubles::kExact) out_.precision(std::numeric_limits<double>::max_digits10);
}

void CsvWriter::separate() {
  if (row_started_) out_ << ',';
  row_started_ = true;
}

CsvWriter& CsvWriter::operator<<(std::string_view text) {
  separate();
  out_ << csv_quote(text);
  return *this;
}

CsvWriter& CsvWriter::cells(std::span<const std::string> fields) {
  for (const std::string& f : fields) *this << f;
  return *this;
}

CsvWriter& CsvWriter::end_row() {
  out_ << '\n';
  row_started_ = false;
  return *this;
}

CsvFile::CsvFile(const std::string& path, CsvWriter::Doubles doubles)
    : file_(path), csv_(file_, doubles) {}

int CsvFile::close() {
  file_.close();  // its buffer's last bytes are written (or fail) here
  return file_ ? 0 : -EIO;
}

}  // namespace tempo
