#include "placement/workload.h"

#include <cerrno>
#include <ostream>
#include <vector>

#include "csv/csv_writer.h"

namespace tempo::placement {

uint64_t access_count(const Request& r) {
  const uint64_t base = r.context.size() + r.input.size();
  uint64_t n = base;  // prefill reads + input writes
  for (uint64_t j = 0; j < r.output.size(); ++j) n += base + j + 1;
  return n;
}

std::vector<Access> access_stream(const Workload& w) {
  uint64_t total = 0;
  for (const auto& r : w.requests) total += access_count(r);
  std::vector<Access> s;
  s.reserve(total);
  std::vector<BlockId> seq;
  for (uint32_t ri = 0; ri < w.requests.size(); ++ri) {
    const Request& r = w.requests[ri];
    for (BlockId b : r.context) s.push_back({b, ri, AccessKind::kPrefillRead, 0});
    for (BlockId b : r.input) s.push_back({b, ri, AccessKind::kWrite, 0});
    seq.assign(r.context.begin(), r.context.end());
    seq.insert(seq.end(), r.input.begin(), r.input.end());
    for (uint32_t j = 0; j < r.output.size(); ++j) {
      for (BlockId b : seq) s.push_back({b, ri, AccessKind::kDecodeRead, j});
      s.push_back({r.output[j], ri, AccessKind::kWrite, j});
      seq.push_back(r.output[j]);
    }
  }
  return s;
}

uint64_t working_set_blocks(const Workload& w) {
  std::vector<bool> seen(w.num_blocks, false);
  uint64_t n = 0;
  auto mark = [&](BlockId b) {
    if (b < seen.size() && !seen[b]) {
      seen[b] = true;
      ++n;
    }
  };
  for (const auto& r : w.requests) {
    for (BlockId b : r.context) mark(b);
    for (BlockId b : r.input) mark(b);
    for (BlockId b : r.output) mark(b);
  }
  return n;
}

std::vector<uint64_t> accesses_per_session(const Workload& w) {
  std::vector<uint64_t> n(w.sessions, 0);
  for (const auto& r : w.requests) {
    if (r.session >= n.size()) n.resize(r.session + 1, 0);
    n[r.session] += access_count(r);
  }
  return n;
}

int write_access_csv(const Workload& w, uint64_t block_bytes, std::ostream& out) {
  CsvWriter csv(out, CsvWriter::Doubles::kSix);
  csv << "time"
      << "block_id"
      << "size_bytes";
  csv.end_row();
  uint64_t t = 0;
  for (const Access& a : access_stream(w)) {
    csv << t++ << a.block << block_bytes;
    csv.end_row();
  }
  return out.good() ? 0 : -EIO;
}

}  // namespace tempo::placement
