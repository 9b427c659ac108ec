#include "config/settings.h"

#include <cerrno>
#include <charconv>
#include <cmath>

#include "config/config_file.h"

namespace tempo {

namespace {

bool parse_number(std::string_view text, double* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && ptr == end && std::isfinite(*out) && *out >= 0;
}

// Splits "12.5GiB" into 12.5 and "GiB".
bool split_unit(std::string_view text, double* number, std::string_view* unit) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  *unit = text.substr(i);
  return parse_number(text.substr(0, i), number);
}

int fail(std::string* error, std::string_view key, std::string_view value,
         std::string_view accepts) {
  if (error)
    *error = "invalid value '" + std::string(value) + "' for '" + std::string(key) +
             "': accepted " + std::string(accepts);
  return -EINVAL;
}

}  // namespace

int64_t parse_bytes(std::string_view text) {
  double n = 0;
  std::string_view unit;
  if (!split_unit(text, &n, &unit)) return -1;
  static const std::pair<std::string_view, double> kUnits[] = {
      {"", 1},      {"B", 1},           {"K", 1e3}, {"KB", 1e3}, {"KiB", 1 << 10},    {"M", 1e6},
      {"MB", 1e6},  {"MiB", 1 << 20},   {"G", 1e9}, {"GB", 1e9}, {"GiB", 1ull << 30}, {"T", 1e12},
      {"TB", 1e12}, {"TiB", 1ull << 40}};
  for (auto [name, scale] : kUnits) {
    if (unit != name) continue;
    const double bytes = n * scale;
    if (bytes > 9.2e18 || bytes != std::floor(bytes)) return -1;
    return static_cast<int64_t>(bytes);
  }
  return -1;
}

std::optional<bool> parse_bool(std::string_view text) {
  for (std::string_view t : {"true", "yes", "on", "1"})
    if (text == t) return true;
  for (std::string_view f : {"false", "no", "off", "0"})
    if (text == f) return false;
  return std::nullopt;
}

TimeNs parse_duration(std::string_view text) {
  double n = 0;
  std::string_view unit;
  if (!split_unit(text, &n, &unit)) return -1;
  static const std::pair<std::string_view, double> kUnits[] = {
      {"", 1e6}, {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  for (auto [name, scale] : kUnits)
    if (unit == name && n * scale < 9.2e18) return static_cast<TimeNs>(std::llround(n * scale));
  return -1;
}

const std::vector<std::pair<std::string_view, std::string_view>>& Settings::keys() {
  static const std::vector<std::pair<std::string_view, std::string_view>> kKeys = {
      {"device", "sim | uring | kmod | daemon (a tempod at daemon.socket)"},
      {"fast_tier_bytes", "fast-tier capacity (bytes, e.g. 100GiB)"},
      {"budget_bytes", "protected-capacity budget, below fast_tier_bytes"},
      {"policy", "demand | immediate | queue-K | tempo-static | tempo"},
      {"tick", "controller tick (duration, e.g. 50ms)"},
      {"staging_rate", "sim: aggregate staging bandwidth (bytes/s, e.g. 11GiB)"},
      {"staging_slots", "concurrent staging operations (1..4096)"},
      {"op_latency", "sim: per-operation latency (duration)"},
      {"demand_rate", "sim: ordinary-path read rate (bytes/s)"},
      {"calibration_rate", "initial effective staging rate for TTR (bytes/s)"},
      {"static_rate", "tempo-static's fixed staging rate (bytes/s)"},
      {"rate_window", "active staging time the learned rate spans (duration)"},
      {"eviction", "eviction policy of unprotected fast-tier objects (e.g. lru)"},
      {"control_socket", "Unix socket serving stats and claims to tempoctl (path; off if unset)"},
      {"calibration_file", "rates measured by `tempoctl calibrate` (path)"},
  };
  return kKeys;
}

const std::vector<std::pair<std::string_view, std::string_view>>& Settings::uring_keys() {
  static const std::vector<std::pair<std::string_view, std::string_view>> kKeys = {
      {"uring.store_path", "object store directory (required for device = uring)"},
      {"uring.data_path", "file or block device holding object data (default <store>/data)"},
      {"uring.store_capacity", "fixed store size in bytes, 0 grows as needed"},
      {"uring.store_sync", "fdatasync each put (boolean)"},
      {"uring.direct_io", "O_DIRECT reads of the store (boolean)"},
      {"uring.fast_tier", "dram | dax"},
      {"uring.dax_path", "a /dev/daxX.Y device or auto"},
      {"uring.numa_node", "NUMA node of the DRAM arena, -1 for the process policy"},
      {"uring.huge_pages", "back the DRAM arena with huge pages when available (boolean)"},
      {"uring.prefault", "touch the fast tier at start (boolean)"},
      {"uring.queue_depth", "reads in flight (1..4096)"},
      {"uring.request_bytes", "largest read request, a multiple of 4KiB"},
      {"uring.verify_checksums", "verify staged objects against the catalog (boolean)"},
  };
  return kKeys;
}

int Settings::set(std::string_view key, std::string_view value, std::string* error) {
  const int r = set_default(key, value, error);
  if (r == 0) explicit_keys.insert(std::string(key));
  return r;
}

int Settings::set_default(std::string_view key, std::string_view value, std::string* error) {
  auto bytes = [&](uint64_t* out) {
    const int64_t b = parse_bytes(value);
    if (b <= 0) return fail(error, key, value, "a positive byte count such as 4096, 64KiB, 8GiB");
    *out = static_cast<uint64_t>(b);
    return 0;
  };
  auto rate = [&](double* out) {
    const int64_t b = parse_bytes(value);
    if (b <= 0) return fail(error, key, value, "a positive rate in bytes/s such as 11GiB");
    *out = static_cast<double>(b);
    return 0;
  };
  auto duration = [&](TimeNs* out, bool zero_ok) {
    const TimeNs d = parse_duration(value);
    if (d < 0 || (d == 0 && !zero_ok))
      return fail(error, key, value, "a duration such as 50ms, 2s, 100us");
    *out = d;
    return 0;
  };
  if (key == "device") {
    if (value != "sim" && value != "uring" && value != "kmod" && value != "daemon")
      return fail(error, key, value, "sim, uring, kmod, daemon");
    device = value;
    return 0;
  }
  if (key == "fast_tier_bytes") return bytes(&fast_tier_bytes);
  if (key == "budget_bytes") return bytes(&budget_bytes);
  if (key == "policy") {
    auto p = parse_policy(value);
    if (!p) return fail(error, key, value, policy_names_help());
    policy = *p;
    return 0;
  }
  if (key == "tick") return duration(&tick_ns, false);
  if (key == "staging_rate") return rate(&staging_rate_bps);
  if (key == "staging_slots") {
    double n = 0;
    if (!parse_number(value, &n) || n < 1 || n > 4096 || n != std::floor(n))
      return fail(error, key, value, "an integer from 1 to 4096");
    staging_slots = static_cast<uint32_t>(n);
    return 0;
  }
  if (key == "op_latency") return duration(&op_latency_ns, true);
  if (key == "demand_rate") return rate(&demand_rate_bps);
  if (key == "calibration_rate") return rate(&calibration_rate_bps);
  if (key == "static_rate") return rate(&static_rate_bps);
  if (key == "rate_window") return duration(&rate_window_ns, false);
  if (key == "eviction") {
    if (value.empty()) return fail(error, key, value, "an eviction policy name such as lru");
    eviction = value;
    return 0;
  }
  if (key == "control_socket") {
    if (value.empty() || value.size() >= 108)
      return fail(error, key, value, "a socket path of 1 to 107 characters");
    control_socket = value;
    return 0;
  }
  if (key == "calibration_file") {
    Settings next = *this;
    if (const int r = apply_calibration_file(next, value, error); r != 0) return r;
    next.calibration_file = value;
    *this = std::move(next);
    return 0;
  }
  if (key.starts_with("uring.")) {
    const int r = set_uring(key, value, error);
    if (r == 0) extra[std::string(key)] = value;
    return r;
  }
  // Device-specific keys are namespaced ("uring.store_path", "kmod.path"): kept for the device.
  if (key.find('.') != std::string_view::npos && key.front() != '.' && key.back() != '.') {
    extra[std::string(key)] = value;
    return 0;
  }
  std::string accepted;
  for (auto [k, d] : keys()) accepted += (accepted.empty() ? "" : ", ") + std::string(k);
  if (error)
    *error = "unknown key '" + std::string(key) + "': accepted " + accepted +
             ", or a device key such as uring.store_path";
  return -EINVAL;
}

int Settings::set_uring(std::string_view key, std::string_view value, std::string* error) {
  UringSettings& u = uring;
  auto boolean = [&](bool* out) {
    const auto b = parse_bool(value);
    if (!b) return fail(error, key, value, "true, false, yes, no, on, off, 1, 0");
    *out = *b;
    return 0;
  };
  auto integer = [&](double lo, double hi, const char* accepts, auto* out) {
    double n = 0;
    const bool negative = value.starts_with('-');
    if (!parse_number(negative ? value.substr(1) : value, &n) || n != std::floor(n))
      return fail(error, key, value, accepts);
    if (negative) n = -n;
    if (n < lo || n > hi) return fail(error, key, value, accepts);
    *out = static_cast<std::remove_reference_t<decltype(*out)>>(n);
    return 0;
  };
  auto path = [&](std::string* out) {
    if (value.empty()) return fail(error, key, value, "a non-empty path");
    *out = value;
    return 0;
  };
  if (key == "uring.store_path") return path(&u.store_path);
  if (key == "uring.data_path") return path(&u.data_path);
  if (key == "uring.store_capacity") {
    const int64_t b = parse_bytes(value);
    if (b < 0) return fail(error, key, value, "a byte count such as 0, 64GiB (0 grows as needed)");
    u.store_capacity = static_cast<uint64_t>(b);
    return 0;
  }
  if (key == "uring.store_sync") return boolean(&u.store_sync);
  if (key == "uring.direct_io") return boolean(&u.direct_io);
  if (key == "uring.fast_tier") {
    if (value != "dram" && value != "dax") return fail(error, key, value, "dram, dax");
    u.fast_tier = value;
    return 0;
  }
  if (key == "uring.dax_path") {
    if (value != "auto" && !value.starts_with("/dev/dax"))
      return fail(error, key, value, "auto or a Device-DAX path such as /dev/dax0.0");
    u.dax_path = value;
    return 0;
  }
  if (key == "uring.numa_node")
    return integer(-1, 1023, "an integer from -1 (no binding) to 1023", &u.numa_node);
  if (key == "uring.huge_pages") return boolean(&u.huge_pages);
  if (key == "uring.prefault") return boolean(&u.prefault);
  if (key == "uring.queue_depth")
    return integer(1, 4096, "an integer from 1 to 4096", &u.queue_depth);
  if (key == "uring.request_bytes") {
    const int64_t b = parse_bytes(value);
    if (b <= 0 || b % 4096 != 0 || b > (1ll << 30))
      return fail(error, key, value, "a multiple of 4KiB up to 1GiB such as 1MiB");
    u.request_bytes = static_cast<uint32_t>(b);
    return 0;
  }
  if (key == "uring.verify_checksums") return boolean(&u.verify_checksums);
  std::string accepted;
  for (auto [k, d] : uring_keys()) accepted += (accepted.empty() ? "" : ", ") + std::string(k);
  if (error) *error = "unknown key '" + std::string(key) + "': accepted " + accepted;
  return -EINVAL;
}

int Settings::validate(std::string* error) const {
  if (budget_bytes >= fast_tier_bytes) {
    if (error)
      *error = "'budget_bytes' (" + std::to_string(budget_bytes) +
               ") must be below 'fast_tier_bytes' (" + std::to_string(fast_tier_bytes) + ")";
    return -EINVAL;
  }
  if (device == "uring" && uring.store_path.empty()) {
    if (error) *error = "'uring.store_path' must be set for device = uring (a store directory)";
    return -EINVAL;
  }
  return 0;
}

}  // namespace tempo
