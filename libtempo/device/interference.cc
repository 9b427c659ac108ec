#include "device/interference.h"

#include <cerrno>
#include <charconv>
#include <cmath>

#include "config/settings.h"

namespace tempo {

int parse_interference(std::string_view text, Interference* out, std::string* error) {
  const size_t a = text.find(':');
  const size_t b = a == std::string_view::npos ? a : text.find(':', a + 1);
  if (b == std::string_view::npos) {
    *error = "interference '" + std::string(text) + "': expected START:END:FACTOR (5s:15s:0.5)";
    return -EINVAL;
  }
  const std::string_view start = text.substr(0, a);
  const std::string_view end = text.substr(a + 1, b - a - 1);
  const std::string_view factor = text.substr(b + 1);
  Interference i;
  i.start = parse_duration(start);
  i.end = parse_duration(end);
  auto [ptr, ec] = std::from_chars(factor.data(), factor.data() + factor.size(), i.rate_factor);
  const bool factor_ok = ec == std::errc() && ptr == factor.data() + factor.size() &&
                         i.rate_factor > 0 && i.rate_factor <= 1;
  if (i.start < 0 || i.end <= i.start || !factor_ok) {
    *error = "interference '" + std::string(text) +
             "': START >= 0, END after it, FACTOR in (0, 1] (5s:15s:0.5)";
    return -EINVAL;
  }
  *out = i;
  return 0;
}

}  // namespace tempo
