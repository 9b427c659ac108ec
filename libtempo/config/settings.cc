#include "config/settings.h"

#include <arpa/inet.h>
#include <grp.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <type_traits>

#include "config/config_file.h"
#include "policy/eviction_policy.h"

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

namespace {

using Apply = int (*)(Settings&, std::string_view, std::string_view, std::string*);

// Parsers, one per kind of value. `Field` returns a reference to the field in Settings.
template <auto Field>
int bytes_key(Settings& s, std::string_view key, std::string_view value, std::string* error) {
  const int64_t b = parse_bytes(value);
  if (b <= 0) return fail(error, key, value, "a positive byte count such as 4096, 64KiB, 8GiB");
  Field(s) = static_cast<uint64_t>(b);
  return 0;
}

template <auto Field>
int rate_key(Settings& s, std::string_view key, std::string_view value, std::string* error) {
  const int64_t b = parse_bytes(value);
  if (b <= 0) return fail(error, key, value, "a positive rate in bytes/s such as 11GiB");
  Field(s) = static_cast<double>(b);
  return 0;
}

// At least kMinNs: 0 where zero means none, 1 for any positive duration.
template <auto Field, TimeNs kMinNs>
int duration_key(Settings& s, std::string_view key, std::string_view value, std::string* error) {
  const TimeNs d = parse_duration(value);
  if (d < kMinNs)
    return fail(error, key, value,
                kMinNs > 1 ? "a duration of at least " + std::to_string(kMinNs / kNsPerMs) +
                                 "ms such as 50ms, 2s"
                           : std::string("a duration such as 50ms, 2s, 100us"));
  Field(s) = d;
  return 0;
}

template <auto Field>
int bool_key(Settings& s, std::string_view key, std::string_view value, std::string* error) {
  const auto b = parse_bool(value);
  if (!b) return fail(error, key, value, "true, false, yes, no, on, off, 1, 0");
  Field(s) = *b;
  return 0;
}

template <auto Field, int kLo, int kHi>
int int_key(Settings& s, std::string_view key, std::string_view value, std::string* error) {
  double n = 0;
  const bool negative = value.starts_with('-');
  const std::string accepts =
      "an integer from " + std::to_string(kLo) + " to " + std::to_string(kHi);
  if (!parse_number(negative ? value.substr(1) : value, &n) || n != std::floor(n))
    return fail(error, key, value, accepts);
  if (negative) n = -n;
  if (n < kLo || n > kHi) return fail(error, key, value, accepts);
  Field(s) = static_cast<std::remove_reference_t<decltype(Field(s))>>(n);
  return 0;
}

template <auto Field>
int path_key(Settings& s, std::string_view key, std::string_view value, std::string* error) {
  if (value.empty()) return fail(error, key, value, "a non-empty path");
  Field(s) = value;
  return 0;
}

// `Field` set to one of `Choices` (a function returning the accepted names).
template <auto Field, auto Choices>
int choice_key(Settings& s, std::string_view key, std::string_view value, std::string* error) {
  std::string accepts;
  for (std::string_view c : Choices()) {
    if (value == c) {
      Field(s) = value;
      return 0;
    }
    accepts += (accepts.empty() ? "" : ", ") + std::string(c);
  }
  return fail(error, key, value, accepts);
}

int policy_key(Settings& s, std::string_view key, std::string_view value, std::string* error) {
  auto p = parse_policy(value);
  if (!p) return fail(error, key, value, policy_names_help());
  s.policy = *p;
  return 0;
}

// staging_rate is the sim device's bandwidth; the TTR's starting rate follows it until
// calibration_rate is given, so a slower device is never projected at the default rate.
int staging_rate_key(Settings& s, std::string_view key, std::string_view value,
                     std::string* error) {
  const int r = rate_key < [](Settings & t) -> auto& { return t.staging_rate_bps; }
  > (s, key, value, error);
  if (r == 0 && !s.calibration_rate_given) s.calibration_rate_bps = s.staging_rate_bps;
  return r;
}

int calibration_rate_key(Settings& s, std::string_view key, std::string_view value,
                         std::string* error) {
  const int r = rate_key < [](Settings & t) -> auto& { return t.calibration_rate_bps; }
  > (s, key, value, error);
  if (r == 0) s.calibration_rate_given = true;
  return r;
}

int eviction_key(Settings& s, std::string_view key, std::string_view value, std::string* error) {
  const std::vector<std::string> names = eviction_policy_names();
  if (std::find(names.begin(), names.end(), value) == names.end()) {
    std::string expect = "one of";
    for (const std::string& n : names) expect += " " + n;
    return fail(error, key, value, expect);
  }
  s.eviction = value;
  return 0;
}

int control_socket_key(Settings& s, std::string_view key, std::string_view value,
                       std::string* error) {
  if (value.empty() || value.size() >= 108)
    return fail(error, key, value, "a socket path of 1 to 107 characters");
  s.control_socket = value;
  return 0;
}

template <auto Field>
int socket_path_key(Settings& s, std::string_view key, std::string_view value, std::string* error) {
  if (value.empty() || value.size() >= 108)
    return fail(error, key, value, "a socket path of 1 to 107 characters");
  Field(s) = value;
  return 0;
}

int engine_key(Settings& s, std::string_view key, std::string_view value, std::string* error) {
  if (value.size() > 23) return fail(error, key, value, "a name of at most 23 bytes");
  s.daemon.engine = value;
  return 0;
}

// "name:weight,name:weight": engine names as daemon.engine takes them, weights 1..1000000.
int shares_key(Settings& s, std::string_view key, std::string_view value, std::string* error) {
  std::map<std::string, uint32_t> shares;
  for (size_t at = 0; !value.empty();) {
    const size_t comma = value.find(',', at);
    const std::string_view item = value.substr(at, comma == value.npos ? value.npos : comma - at);
    const size_t colon = item.rfind(':');
    uint32_t w = 0;
    const char* end = item.data() + item.size();
    if (colon == std::string_view::npos || colon == 0 || colon > 23 ||
        std::from_chars(item.data() + colon + 1, end, w).ptr != end || w == 0 || w > 1000000 ||
        !shares.emplace(std::string(item.substr(0, colon)), w).second)
      return fail(error, key, value,
                  "engine:weight pairs separated by commas (names of at most 23 bytes, each "
                  "once; weights 1..1000000)");
    if (comma == value.npos) break;
    at = comma + 1;
  }
  s.daemon.shares = std::move(shares);
  return 0;
}

int socket_mode_key(Settings& s, std::string_view key, std::string_view value, std::string* error) {
  unsigned mode = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), mode, 8);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size() || mode > 0777)
    return fail(error, key, value, "an octal mode such as 0660");
  s.daemon.socket_mode = mode;
  return 0;
}

// "127.0.0.1:9464": a loopback IPv4 address (127.0.0.0/8) and a port 1..65535.
int metrics_listen_key(Settings& s, std::string_view key, std::string_view value,
                       std::string* error) {
  const size_t colon = value.rfind(':');
  in_addr addr{};
  unsigned port = 0;
  const std::string_view p = colon == std::string_view::npos ? "" : value.substr(colon + 1);
  const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), port);
  if (colon == std::string_view::npos ||
      inet_pton(AF_INET, std::string(value.substr(0, colon)).c_str(), &addr) != 1 ||
      (ntohl(addr.s_addr) >> 24) != 127 || p.empty() || ec != std::errc() ||
      end != p.data() + p.size() || port == 0 || port > 65535)
    return fail(error, key, value, "a loopback address and port such as 127.0.0.1:9464");
  s.daemon.metrics_listen = value;
  s.daemon.metrics_addr = addr.s_addr;
  s.daemon.metrics_port = static_cast<uint16_t>(port);
  return 0;
}

int socket_group_key(Settings& s, std::string_view key, std::string_view value,
                     std::string* error) {
  if (value.empty() || getgrnam(std::string(value).c_str()) == nullptr)
    return fail(error, key, value, "the name of an existing group");
  s.daemon.socket_group = value;
  return 0;
}

int calibration_file_key(Settings& s, std::string_view, std::string_view value,
                         std::string* error) {
  Settings next = s;
  if (const int r = apply_calibration_file(next, value, error); r != 0) return r;
  next.calibration_file = value;
  s = std::move(next);
  return 0;
}

int store_capacity_key(Settings& s, std::string_view key, std::string_view value,
                       std::string* error) {
  const int64_t b = parse_bytes(value);
  if (b < 0) return fail(error, key, value, "a byte count such as 0, 64GiB (0 grows as needed)");
  s.uring.store_capacity = static_cast<uint64_t>(b);
  return 0;
}

int dax_path_key(Settings& s, std::string_view key, std::string_view value, std::string* error) {
  if (value != "auto" && !value.starts_with("/dev/dax"))
    return fail(error, key, value, "auto or a Device-DAX path such as /dev/dax0.0");
  s.uring.dax_path = value;
  return 0;
}

int request_bytes_key(Settings& s, std::string_view key, std::string_view value,
                      std::string* error) {
  const int64_t b = parse_bytes(value);
  if (b <= 0 || b % 4096 != 0 || b > (1ll << 30))
    return fail(error, key, value, "a multiple of 4KiB up to 1GiB such as 1MiB");
  s.uring.request_bytes = static_cast<uint32_t>(b);
  return 0;
}

template <auto Field>
int name_key(Settings& s, std::string_view key, std::string_view value, std::string* error) {
  if (value.empty()) return fail(error, key, value, "a non-empty name");
  Field(s) = value;
  return 0;
}

int op_timeout_key(Settings& s, std::string_view key, std::string_view value, std::string* error) {
  double seconds = 0;
  if (!parse_number(value, &seconds) || seconds <= 0)
    return fail(error, key, value, "a positive number of seconds such as 5, 0.5");
  s.cluster.op_timeout_s = seconds;
  return 0;
}

constexpr std::string_view kDevices[] = {"sim", "uring", "kmod", "daemon"};
constexpr std::string_view kFastTiers[] = {"dram", "dax"};
constexpr std::string_view kClusterBackends[] = {"off", "rados"};

#define TEMPO_FIELD(path) \
  [](Settings & s) -> auto& { return s.path; }

// The settings table. A key's default is parsed like any value when Settings is built.
const SettingKey kSettingKeys[] = {
    {"device", "sim", "", "`sim`, `uring`, `kmod`, `daemon` (a tempod at `daemon.socket`)",
     choice_key<TEMPO_FIELD(device), [] { return std::span(kDevices); }>},
    {"fast_tier_bytes", "100GiB", "",
     "bytes: `4096`, `64KiB`, `8GiB`, `1.5GB`; on `uring` the DRAM arena's size",
     bytes_key<TEMPO_FIELD(fast_tier_bytes)>},
    {"budget_bytes", "50GiB", "",
     "bytes, below `fast_tier_bytes` (on `uring`, below the fast tier actually mapped)",
     bytes_key<TEMPO_FIELD(budget_bytes)>},
    {"policy", "tempo", "",
     "`demand`, `immediate`, `queue-K` (K >= 1), `tempo-static`, `tempo`, `tempo-risk` or "
     "`tempo-risk:W` (W > 0; the per-step call gives it the TTU spread, "
     "[risk-policy.md](risk-policy.md))",
     policy_key},
    {"tick", "50ms", "", "a duration of at least 1 ms: `50ms`, `2s` (a plain number is ms)",
     duration_key<TEMPO_FIELD(tick_ns), kMinTickNs>},
    {"staging_rate", "11GiB", "",
     "bytes/s: the sim device's aggregate staging bandwidth (`calibration_rate` follows it "
     "unless given)",
     staging_rate_key},
    {"staging_slots", "8", "",
     "1..4096 concurrent staging operations (on `uring`, the device's queue depth unless set)",
     int_key<TEMPO_FIELD(staging_slots), 1, kMaxStagingSlots>},
    {"op_latency", "100us", "", "duration (sim: per staging operation)",
     duration_key<TEMPO_FIELD(op_latency_ns), 0>},
    {"demand_rate", "2GiB", "", "bytes/s (sim: the ordinary path; uring: reported as calibrated)",
     rate_key<TEMPO_FIELD(demand_rate_bps)>},
    {"calibration_rate", "", "`staging_rate`",
     "bytes/s: where the learned staging rate (and so every TTR) starts", calibration_rate_key},
    {"static_rate", "11GiB", "", "bytes/s: TempoKV-Static's fixed rate",
     rate_key<TEMPO_FIELD(static_rate_bps)>},
    {"rate_window", "2s", "", "duration: active staging time the learned rate averages over",
     duration_key<TEMPO_FIELD(rate_window_ns), 1>},
    {"eviction", "lru", "",
     "the eviction policy of unprotected fast-tier objects: lru, arc, reuse-frequency, "
     "reuse-frequency-persistent",
     eviction_key},
    {"control_socket", "", "off",
     "a Unix socket path (1..107 characters): the instance serves `tempoctl stats` and "
     "`tempoctl claims` there, mode 0600",
     control_socket_key},
    {"calibration_file", "", "none",
     "a file `tempoctl calibrate` wrote: its rates replace the defaults of keys not set",
     calibration_file_key},
    {"uring.store_path", "", "required",
     "the object store's directory (created if missing; required for `device = uring`)",
     path_key<TEMPO_FIELD(uring.store_path)>},
    {"uring.data_path", "", "`<store>/data`", "a file or block device holding object data",
     path_key<TEMPO_FIELD(uring.data_path)>},
    {"uring.store_capacity", "0", "",
     "bytes; `0` grows the data file as needed, else a fixed, preallocated store",
     store_capacity_key},
    {"uring.store_sync", "false", "", "boolean: `fdatasync` before each put returns",
     bool_key<TEMPO_FIELD(uring.store_sync)>},
    {"uring.direct_io", "true", "",
     "boolean: `O_DIRECT` store reads (buffered where the file system refuses)",
     bool_key<TEMPO_FIELD(uring.direct_io)>},
    {"uring.fast_tier", "dram", "", "`dram` (an anonymous arena) or `dax` (a Device-DAX mapping)",
     choice_key<TEMPO_FIELD(uring.fast_tier), [] { return std::span(kFastTiers); }>},
    {"uring.dax_path", "auto", "", "`auto` (the first DAX device libdaxctl finds) or `/dev/daxX.Y`",
     dax_path_key},
    {"uring.numa_node", "-1", "", "-1 (the process policy) .. 1023: the DRAM arena's node",
     int_key<TEMPO_FIELD(uring.numa_node), -1, 1023>},
    {"uring.huge_pages", "true", "",
     "boolean: hugetlb pages when reserved, else transparent huge pages",
     bool_key<TEMPO_FIELD(uring.huge_pages)>},
    {"uring.prefault", "true", "",
     "boolean: touch the whole arena at start (no page faults while staging); `false` also "
     "turns io_uring buffer registration off (it would pin, so fault in, the whole arena)",
     bool_key<TEMPO_FIELD(uring.prefault)>},
    {"uring.queue_depth", "16", "", "1..4096 reads in flight",
     int_key<TEMPO_FIELD(uring.queue_depth), 1, kMaxUringQueueDepth>},
    {"uring.request_bytes", "4MiB", "", "the largest read, a multiple of 4KiB up to 1GiB",
     request_bytes_key},
    {"uring.verify_checksums", "true", "",
     "boolean: verify each staged or demand-read object against the catalog",
     bool_key<TEMPO_FIELD(uring.verify_checksums)>},
    {"kmod.path", "/dev/tempo0", "",
     "the `tempo.ko` device node `device = kmod` opens (objects placed with "
     "`tempo_kmod_add_objects`, Documentation/kmod.md)",
     path_key<TEMPO_FIELD(kmod.path)>},
    {"daemon.socket", "/run/tempo/tempod.sock", "",
     "a Unix socket path (1..107 characters): where tempod serves and `device = daemon` "
     "connects",
     socket_path_key<TEMPO_FIELD(daemon.socket)>},
    {"daemon.engine", "", "its own per connection (`#<client> pid <N>`)",
     "`device = daemon`: this engine's name in tempod (at most 23 bytes): its processes share "
     "claims, order and protected-capacity share",
     engine_key},
    {"daemon.socket_mode", "0660", "", "tempod: the socket's permissions, an octal mode",
     socket_mode_key},
    {"daemon.socket_group", "", "tempod's group",
     "tempod: the socket's group; peers with it as their group are admitted", socket_group_key},
    {"daemon.max_queued", "256", "",
     "tempod: 1..65536 replies waiting for one client, with its waits and store operations "
     "in flight, before its requests are not read",
     int_key<TEMPO_FIELD(daemon.max_queued), 1, 65536>},
    {"daemon.max_put_bytes", "1GiB", "",
     "tempod: bytes, the largest object one client put (`tempo_store_put`) may hand over; "
     "larger puts get `EFBIG` and nothing is written",
     bytes_key<TEMPO_FIELD(daemon.max_put_bytes)>},
    {"daemon.metrics_listen", "", "off",
     "tempod: `127.0.0.1:PORT` (a loopback address): serve `GET /metrics` there, the "
     "Prometheus text of `tempoctl metrics`",
     metrics_listen_key},
    {"daemon.shares", "", "every engine `daemon.default_share`",
     "tempod: protected-capacity share weights of named engines, `engine:weight,...` (weights "
     "1..1000000); an engine's part of the budget is budget x its weight / the weights of the "
     "engines with live claims",
     shares_key},
    {"daemon.default_share", "1", "",
     "tempod: the share weight of an engine `daemon.shares` does not name, 1..1000000",
     int_key<TEMPO_FIELD(daemon.default_share), 1, 1000000>},
    {"daemon.max_connections", "512", "",
     "tempod: 1..1048576 connections at once; a connection beyond them is refused with "
     "`EBUSY` (\"connection limit N reached\") and closed",
     int_key<TEMPO_FIELD(daemon.max_connections), 1, 1048576>},
    {"daemon.hello_timeout", "5s", "",
     "tempod: a duration, how long a connection may take from its accept to its HELLO "
     "before it is closed",
     duration_key<TEMPO_FIELD(daemon.hello_timeout), 1>},
    {"cluster.backend", "off", "",
     "`off` or `rados`: a Ceph RADOS pool below the `uring` store (Documentation/cluster.md)",
     choice_key<TEMPO_FIELD(cluster.backend), [] { return std::span(kClusterBackends); }>},
    {"cluster.conf", "", "librados' search (`CEPH_CONF`, `/etc/ceph/ceph.conf`)",
     "the cluster's `ceph.conf`", path_key<TEMPO_FIELD(cluster.conf)>},
    {"cluster.pool", "tempo", "", "the pool's name (one per deployment)",
     name_key<TEMPO_FIELD(cluster.pool)>},
    {"cluster.client", "client.admin", "", "the cephx user (`client.tempo`)",
     name_key<TEMPO_FIELD(cluster.client)>},
    {"cluster.prefix", "tempo/", "", "object names' prefix: the deployment's namespace in the pool",
     name_key<TEMPO_FIELD(cluster.prefix)>},
    {"cluster.op_timeout_s", "5", "",
     "seconds: every pool operation fails with `ETIMEDOUT` after this instead of waiting",
     op_timeout_key},
    {"cluster.keep_local", "false", "",
     "boolean: write what is staged from the pool to the local store as well",
     bool_key<TEMPO_FIELD(cluster.keep_local)>},
};

#undef TEMPO_FIELD

}  // namespace

std::span<const SettingKey> setting_keys() { return kSettingKeys; }

const SettingKey* find_setting_key(std::string_view key) {
  for (const SettingKey& k : kSettingKeys)
    if (k.key == key) return &k;
  return nullptr;
}

bool is_setting_section(std::string_view name) {
  for (const SettingKey& k : kSettingKeys) {
    const size_t dot = k.key.find('.');
    if (dot != std::string_view::npos && k.key.substr(0, dot) == name) return true;
  }
  return false;
}

std::string settings_markdown() {
  std::string md = "| key | default | accepted |\n|---|---|---|\n";
  for (const SettingKey& k : kSettingKeys) {
    const std::string shown = k.default_value.empty() ? std::string(k.when_unset)
                                                      : "`" + std::string(k.default_value) + "`";
    md += "| `" + std::string(k.key) + "` | " + shown + " | " + std::string(k.doc) + " |\n";
  }
  return md;
}

Settings::Settings() {
  for (const SettingKey& k : kSettingKeys) {
    if (k.default_value.empty()) continue;
    std::string error;
    if (k.apply(*this, k.key, k.default_value, &error) != 0)
      throw std::logic_error("settings table: default of " + std::string(k.key) + ": " + error);
  }
}

int Settings::set(std::string_view key, std::string_view value, std::string* error) {
  const int r = set_default(key, value, error);
  if (r == 0) explicit_keys.insert(std::string(key));
  return r;
}

int Settings::set_default(std::string_view key, std::string_view value, std::string* error) {
  if (const SettingKey* k = find_setting_key(key)) return k->apply(*this, key, value, error);
  std::string accepted;
  for (const SettingKey& k : kSettingKeys)
    accepted += (accepted.empty() ? "" : ", ") + std::string(k.key);
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
  if (cluster.backend != "off" && device != "uring") {
    if (error) *error = "'cluster.backend' needs device = uring (the tier is below its store)";
    return -EINVAL;
  }
  if (device == "uring" && uring.store_path.empty()) {
    if (error) *error = "'uring.store_path' must be set for device = uring (a store directory)";
    return -EINVAL;
  }
  return 0;
}

}  // namespace tempo
