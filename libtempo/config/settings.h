// Settings of one TempoKV instance as key = value pairs: the C ABI's tempo_config_set, the
// configuration file and environment overrides all land here, and every invalid value gets
// an error naming the key and what it accepts.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "controller/commit_policy.h"
#include "core/time.h"

namespace tempo {

// The uring device's keys (`uring.<name>`): the object store and the fast tier.
struct UringSettings {
  std::string store_path;             // uring.store_path: the store's directory (required)
  std::string data_path;              // uring.data_path: a file or block device for data
  uint64_t store_capacity = 0;        // uring.store_capacity: 0 grows as needed
  bool store_sync = false;            // uring.store_sync: fdatasync every put
  bool direct_io = true;              // uring.direct_io: O_DIRECT store reads
  std::string fast_tier = "dram";     // uring.fast_tier: dram or dax
  std::string dax_path = "auto";      // uring.dax_path: /dev/daxX.Y or auto
  int numa_node = -1;                 // uring.numa_node: -1 leaves the process policy
  bool huge_pages = true;             // uring.huge_pages
  bool prefault = true;               // uring.prefault: touch the arena at start
  uint32_t queue_depth = 16;          // uring.queue_depth: reads in flight
  uint32_t request_bytes = 4u << 20;  // uring.request_bytes: largest read (4 KiB multiple)
  bool verify_checksums = true;       // uring.verify_checksums: check staged objects
  bool share_fast_tier = false;       // not a key: tempod backs the arena with a memfd
};

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
  std::string control_socket;    // a Unix socket path serving stats and claims; "" is off
  std::string calibration_file;  // measured rates (tempoctl calibrate) applied at set time
  UringSettings uring;
  // Keys given explicitly (set, file, environment): a calibration file fills only the rest.
  std::set<std::string> explicit_keys;
  // Keys this build does not interpret itself (device-specific: store path, DAX device...).
  std::map<std::string, std::string> extra;

  // Sets one key. On error returns -EINVAL and writes a message naming the key and the
  // accepted values into `error`.
  int set(std::string_view key, std::string_view value, std::string* error);
  // As set(), without marking the key explicit (calibration values).
  int set_default(std::string_view key, std::string_view value, std::string* error);
  bool is_explicit(std::string_view key) const { return explicit_keys.count(std::string(key)); }
  // Cross-key checks (budget below the fast tier...). Same error convention.
  int validate(std::string* error) const;
  // Every key `set` accepts, with a one-line description.
  static const std::vector<std::pair<std::string_view, std::string_view>>& keys();
  // The uring device's keys (full names, "uring.store_path"...), with descriptions.
  static const std::vector<std::pair<std::string_view, std::string_view>>& uring_keys();

 private:
  int set_uring(std::string_view key, std::string_view value, std::string* error);
};

// "4096", "64KiB", "8GiB", "1.5GB": bytes (binary and decimal suffixes). -1 if malformed.
int64_t parse_bytes(std::string_view text);
// "50ms", "2s", "100us", "250ns" or a plain number of milliseconds. -1 if malformed.
TimeNs parse_duration(std::string_view text);
// true/false, yes/no, on/off, 1/0. nullopt if none of them.
std::optional<bool> parse_bool(std::string_view text);

}  // namespace tempo
