#include "workload/trace.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <unordered_set>

#include <nlohmann/json.hpp>

namespace tempo {

namespace {

struct Line {
  TimeNs timestamp = 0;
  uint64_t input_length = 0;
  uint32_t output_length = 0;
  std::vector<uint64_t> hash_ids;
  uint64_t line = 0;
};

// A non-negative integer member, or the reason it is not one.
bool read_count(const nlohmann::json& obj, const char* key, uint64_t min, uint64_t max,
                uint64_t* out, std::string* why) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    *why = std::string("missing '") + key + "'";
    return false;
  }
  if (it->is_number_integer() && !it->is_number_unsigned() && it->get<int64_t>() < 0) {
    *why = std::string("'") + key + "' is negative";
    return false;
  }
  if (!it->is_number_unsigned()) {
    *why = std::string("'") + key + "' must be a non-negative integer";
    return false;
  }
  const uint64_t v = it->get<uint64_t>();
  if (v < min || v > max) {
    *why = std::string("'") + key + "' must be in [" + std::to_string(min) + ", " +
           std::to_string(max) + "], not " + std::to_string(v);
    return false;
  }
  *out = v;
  return true;
}

bool parse_line(const std::string& text, const TraceOptions& o, Line* out, std::string* why) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    *why = "not valid JSON";
    return false;
  }
  if (!j.is_object()) {
    *why = "not a JSON object";
    return false;
  }
  auto ts = j.find("timestamp");
  if (ts == j.end()) {
    *why = "missing 'timestamp'";
    return false;
  }
  if (!ts->is_number()) {
    *why = "'timestamp' must be a number (ms)";
    return false;
  }
  const double ms = ts->get<double>();
  if (!std::isfinite(ms) || ms < 0) {
    *why = "'timestamp' is negative";
    return false;
  }
  if (ms > kMaxTraceTimestampMs) {
    *why = "'timestamp' is too large (at most 9e12 ms)";
    return false;
  }
  out->timestamp = static_cast<TimeNs>(std::llround(ms * 1e6));
  uint64_t output = 0;
  if (!read_count(j, "input_length", 1, kMaxTraceTokens, &out->input_length, why)) return false;
  if (!read_count(j, "output_length", 1, kMaxTraceTokens, &output, why)) return false;
  out->output_length = static_cast<uint32_t>(output);
  auto ids = j.find("hash_ids");
  if (ids == j.end()) {
    *why = "missing 'hash_ids'";
    return false;
  }
  if (!ids->is_array()) {
    *why = "'hash_ids' must be an array";
    return false;
  }
  const uint64_t blocks = (out->input_length + o.block_tokens - 1) / o.block_tokens;
  if (ids->size() > blocks) {
    *why = "'hash_ids' has " + std::to_string(ids->size()) + " blocks but input_length " +
           std::to_string(out->input_length) + " fills at most " + std::to_string(blocks) + " of " +
           std::to_string(o.block_tokens) + " tokens";
    return false;
  }
  out->hash_ids.clear();
  out->hash_ids.reserve(ids->size());
  for (size_t i = 0; i < ids->size(); ++i) {
    const nlohmann::json& id = (*ids)[i];
    if (!id.is_number_unsigned()) {
      *why = "'hash_ids[" + std::to_string(i) + "]' must be a non-negative integer";
      return false;
    }
    out->hash_ids.push_back(id.get<uint64_t>());
  }
  return true;
}

// Reads one line (without its '\n') into *text, stopping at kMaxTraceLineBytes: then *text
// holds that much and the rest of the line is left unread. false at the end of input.
bool read_line(std::istream& in, std::string* text) {
  text->clear();
  std::streambuf* buf = in.rdbuf();
  for (int c = buf->sbumpc(); c != std::char_traits<char>::eof(); c = buf->sbumpc()) {
    if (c == '\n') return true;
    text->push_back(static_cast<char>(c));
    if (text->size() > kMaxTraceLineBytes) return true;
  }
  in.setstate(std::ios::eofbit);
  return !text->empty();
}

// Skips the rest of an over-long line.
void skip_line(std::istream& in) {
  std::streambuf* buf = in.rdbuf();
  for (int c = buf->sbumpc(); c != std::char_traits<char>::eof() && c != '\n'; c = buf->sbumpc()) {
  }
}

}  // namespace

int parse_trace(std::istream& in, std::string_view source, const TraceOptions& o,
                std::vector<Request>* out, TraceStats* stats, std::string* error) {
  out->clear();
  *stats = TraceStats{};
  if (o.block_tokens == 0 || o.kv_bytes_per_token == 0) {
    if (error) *error = std::string(source) + ": block_tokens and kv_bytes_per_token must be > 0";
    return -EINVAL;
  }
  std::vector<Line> lines;
  std::string text;
  Line line;
  TimeNs latest = 0;
  // A malformed line: the error, or (skip_malformed) counted and skipped. false to stop.
  const auto reject = [&](uint64_t at, const std::string& why) {
    const std::string msg = std::string(source) + ":" + std::to_string(at) + ": " + why;
    if (!o.skip_malformed) {
      if (error) *error = msg;
      return false;
    }
    if (stats->skipped++ == 0) stats->first_skipped = msg;
    return true;
  };
  // Blank lines end the trace (an editor's final newline, and more); only a request line
  // after them makes them malformed.
  uint64_t first_blank = 0, blanks = 0;
  for (;;) {
    bool more = false;
    try {  // a filebuf throws on a read error (a directory: EISDIR)
      more = read_line(in, &text);
    } catch (const std::ios_base::failure&) {
      const int e = errno != 0 ? errno : EIO;
      out->clear();
      if (error) *error = std::string(source) + ": cannot read: " + std::strerror(e);
      return -e;
    }
    if (!more) break;
    ++stats->lines;
    std::string why;
    line.line = stats->lines;
    const bool too_long = text.size() > kMaxTraceLineBytes;
    if (!too_long && text.find_first_not_of(" \t\r") == std::string::npos) {
      if (blanks++ == 0) first_blank = stats->lines;
      continue;
    }
    for (; blanks > 0; --blanks, ++first_blank)
      if (!reject(first_blank, "empty line")) return -EINVAL;
    if (too_long) {
      why = "line longer than " + std::to_string(kMaxTraceLineBytes) + " bytes";
      if (o.skip_malformed) skip_line(in);
    }
    if (too_long || !parse_line(text, o, &line, &why)) {
      if (!reject(stats->lines, why)) return -EINVAL;
      continue;
    }
    if (line.timestamp < latest) ++stats->reordered;
    latest = std::max(latest, line.timestamp);
    lines.push_back(std::move(line));
  }
  if (in.bad()) {
    if (error) *error = std::string(source) + ": read error";
    return -EIO;
  }
  std::stable_sort(lines.begin(), lines.end(),
                   [](const Line& a, const Line& b) { return a.timestamp < b.timestamp; });

  std::unordered_set<uint64_t> seen;  // ids of full blocks of earlier requests
  out->reserve(lines.size());
  for (const Line& l : lines) {
    Request r;
    r.id = out->size();
    r.arrival = l.timestamp;
    r.input_tokens = l.input_length;
    r.output_tokens = l.output_length;
    r.chunk_tokens = o.block_tokens;
    r.chunk_bytes = o.block_tokens * o.kv_bytes_per_token;
    r.source = l.line;
    const uint64_t full = std::min<uint64_t>(l.hash_ids.size(), l.input_length / o.block_tokens);
    ObjectKey key = chain_key(0, o.key_namespace);
    bool reusable = true;
    r.chunk_keys.reserve(full);
    for (uint64_t i = 0; i < full; ++i) {
      key = chain_key(key, l.hash_ids[i]);
      r.chunk_keys.push_back(key);
      reusable = reusable && seen.contains(l.hash_ids[i]);
      if (reusable) r.cached_tokens += o.block_tokens;
    }
    for (uint64_t i = 0; i < full; ++i) seen.insert(l.hash_ids[i]);
    out->push_back(std::move(r));
  }
  stats->requests = out->size();
  return 0;
}

int load_trace(const std::string& path, const TraceOptions& options, std::vector<Request>* out,
               TraceStats* stats, std::string* error) {
  out->clear();
  std::ifstream in(path);
  if (!in) {
    const int err = errno != 0 ? errno : ENOENT;
    if (error) *error = path + ": cannot read: " + std::strerror(err);
    return -err;
  }
  return parse_trace(in, path, options, out, stats, error);
}

}  // namespace tempo
