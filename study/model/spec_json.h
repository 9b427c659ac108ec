// Strict reading of the model and GPU definition files: every key is checked for presence,
// type and range, unknown keys are rejected (a typo must not fall back to a default), and
// the first problem is reported as "<file>: key '<key>': <what is wrong>".
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tempo::spec_json {

// Parses `text` as one JSON object; -EINVAL with *error naming `source` otherwise.
int parse_object(std::string_view text, std::string_view source, nlohmann::json* out,
                 std::string* error);

class Reader {
 public:
  Reader(const nlohmann::json& obj, std::string_view source, std::string* error)
      : obj_(obj), source_(source), error_(error) {}

  // Each getter leaves *out untouched when an optional key is absent, and records the
  // first error it meets; later calls after an error do nothing.
  void text(const char* key, bool required, std::string* out);
  void count(const char* key, bool required, uint32_t* out);  // integer >= 1
  void count64(const char* key, bool required, uint64_t* out);
  void positive(const char* key, bool required, double* out);  // finite, > 0
  void fraction(const char* key, bool required, double* out);  // in (0, 1]
  void non_negative(const char* key, bool required, double* out);
  void flag(const char* key, bool required, bool* out);
  // Bytes per element of a dtype name ("bfloat16", "float16", "float32", "float8_e4m3fn").
  void dtype_bytes(const char* key, bool required, uint32_t* out);
  // Reports a key that no getter asked for.
  void reject_unknown_keys();
  // Records a problem with `key` found by the caller (cross-field checks).
  void fail(const char* key, const std::string& what);

  bool ok() const { return ok_; }

 private:
  const nlohmann::json* find(const char* key, bool required);

  const nlohmann::json& obj_;
  std::string source_;
  std::string* error_;
  std::set<std::string, std::less<>> seen_;
  bool ok_ = true;
};

}  // namespace tempo::spec_json
