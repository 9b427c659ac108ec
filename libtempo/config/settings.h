// Settings of one TempoKV instance as key = value pairs: the C ABI's tempo_config_set, the
// configuration file and environment overrides all land here, and every invalid value gets
// an error naming the key and what it accepts.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "controller/commit_policy.h"
#include "core/time.h"

namespace tempo {

struct Settings {
  std::string device = "sim";
  uint64_t fast_tier_bytes = 100ull << 30;
  uint64_t budget_bytes = 50ull << 30;
  PolicySpec policy{CommitPolicy::kTempo, 4};
  TimeNs tick_ns = 50 * kNsPerMs;
  double staging_rate_bps = 11.0 * (1ull << 30);
  uint32_t staging_slots = 8;
  TimeNs op_latency_ns = 100 * kNsPerUs;
  double demand_rate_bps = 2.0 * (1ull << 30);
  double calibration_rate_bps = 11.0 * (1ull << 30);
  double static_rate_bps = 11.0 * (1ull << 30);
  TimeNs rate_window_ns = 2 * kNsPerSec;
  std::string eviction = "lru";
  // Keys this build does not interpret itself (device-specific: store path, DAX device...).
  std::map<std::string, std::string> extra;

  // Sets one key. On error returns -EINVAL and writes a message naming the key and the
  // accepted values into `error`.
  int set(std::string_view key, std::string_view value, std::string* error);
  // Cross-key checks (budget below the fast tier...). Same error convention.
  int validate(std::string* error) const;
  // Every key `set` accepts, with a one-line description.
  static const std::vector<std::pair<std::string_view, std::string_view>>& keys();
};

// "4096", "64KiB", "8GiB", "1.5GB": bytes (binary and decimal suffixes). -1 if malformed.
int64_t parse_bytes(std::string_view text);
// "50ms", "2s", "100us", "250ns" or a plain number of milliseconds. -1 if malformed.
TimeNs parse_duration(std::string_view text);

}  // namespace tempo
