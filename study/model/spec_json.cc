#include "model/spec_json.h"

#include <cerrno>
#include <cmath>

namespace tempo::spec_json {

int parse_object(std::string_view text, std::string_view source, nlohmann::json* out,
                 std::string* error) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    if (error) *error = std::string(source) + ": not valid JSON";
    return -EINVAL;
  }
  if (!j.is_object()) {
    if (error) *error = std::string(source) + ": top level must be a JSON object";
    return -EINVAL;
  }
  *out = std::move(j);
  return 0;
}

void Reader::fail(const char* key, const std::string& what) {
  if (!ok_) return;
  ok_ = false;
  if (error_) *error_ = source_ + ": key '" + key + "': " + what;
}

const nlohmann::json* Reader::find(const char* key, bool required) {
  seen_.insert(key);
  if (!ok_) return nullptr;
  auto it = obj_.find(key);
  if (it == obj_.end()) {
    if (required) fail(key, "missing");
    return nullptr;
  }
  return &*it;
}

void Reader::text(const char* key, bool required, std::string* out) {
  const nlohmann::json* v = find(key, required);
  if (!v) return;
  if (!v->is_string()) return fail(key, "must be a string");
  *out = v->get<std::string>();
  if (required && out->empty()) fail(key, "must not be empty");
}

void Reader::count64(const char* key, bool required, uint64_t* out) {
  const nlohmann::json* v = find(key, required);
  if (!v) return;
  if (!v->is_number_integer()) return fail(key, "must be an integer");
  if (v->is_number_unsigned() ? v->get<uint64_t>() == 0 : v->get<int64_t>() < 1) {
    return fail(key, "must be >= 1");
  }
  *out = v->get<uint64_t>();
}

void Reader::count(const char* key, bool required, uint32_t* out) {
  uint64_t v = 0;
  count64(key, required, &v);
  if (!ok_ || v == 0) return;
  if (v > UINT32_MAX) return fail(key, "too large");
  *out = static_cast<uint32_t>(v);
}

void Reader::non_negative(const char* key, bool required, double* out) {
  const nlohmann::json* v = find(key, required);
  if (!v) return;
  if (!v->is_number()) return fail(key, "must be a number");
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < 0) return fail(key, "must be a finite number >= 0");
  *out = d;
}

void Reader::positive(const char* key, bool required, double* out) {
  double d = 0;
  const bool was_ok = ok_;
  non_negative(key, required, &d);
  if (!was_ok || !ok_ || !obj_.contains(key)) return;
  if (d <= 0) return fail(key, "must be > 0");
  *out = d;
}

void Reader::fraction(const char* key, bool required, double* out) {
  double d = 0;
  const bool was_ok = ok_;
  non_negative(key, required, &d);
  if (!was_ok || !ok_ || !obj_.contains(key)) return;
  if (d <= 0 || d > 1) return fail(key, "must be in (0, 1]");
  *out = d;
}

void Reader::flag(const char* key, bool required, bool* out) {
  const nlohmann::json* v = find(key, required);
  if (!v) return;
  if (!v->is_boolean()) return fail(key, "must be true or false");
  *out = v->get<bool>();
}

void Reader::dtype_bytes(const char* key, bool required, uint32_t* out) {
  std::string name;
  text(key, required, &name);
  if (!ok_ || name.empty()) return;
  if (name == "bfloat16" || name == "float16") {
    *out = 2;
  } else if (name == "float32") {
    *out = 4;
  } else if (name == "float8_e4m3fn" || name == "float8_e5m2") {
    *out = 1;
  } else {
    fail(key,
         "unknown dtype '" + name + "' (bfloat16, float16, float32, float8_e4m3fn, float8_e5m2)");
  }
}

void Reader::reject_unknown_keys() {
  if (!ok_) return;
  for (auto it = obj_.begin(); it != obj_.end(); ++it) {
    if (!seen_.contains(it.key())) return fail(it.key().c_str(), "unknown key");
  }
}

}  // namespace tempo::spec_json
