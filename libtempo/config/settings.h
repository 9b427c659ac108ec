// Settings of one TempoKV instance as key = value pairs: the C ABI's tempo_config_set, the
// configuration file and environment overrides all land here through one table of keys
// (setting_keys()), and every invalid value or unknown key gets an error naming the key and
// what it accepts.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "controller/commit_policy.h"
#include "core/time.h"

namespace tempo {

// Bounds of the staging_slots and uring.queue_depth keys, which the tools' flags share.
inline constexpr uint32_t kMaxStagingSlots = 4096;
inline constexpr uint32_t kMaxUringQueueDepth = 4096;
// The shortest `tick`: the controller re-evaluates every tick (a claim falling due wakes it
// anyway), so a 1 ns tick spun a CPU, and advanced virtual time by 10^9 events a second.
inline constexpr TimeNs kMinTickNs = kNsPerMs;

// The uring device's keys (`uring.<name>`): the object store and the fast tier.
struct UringSettings {
  std::string store_path;     // uring.store_path: the store's directory (required)
  std::string data_path;      // uring.data_path: a file or block device for data
  uint64_t store_capacity{};  // uring.store_capacity: 0 grows as needed
  bool store_sync{};          // uring.store_sync: fdatasync every put
  bool direct_io{};           // uring.direct_io: O_DIRECT store reads
  std::string fast_tier;      // uring.fast_tier: dram or dax
  std::string dax_path;       // uring.dax_path: /dev/daxX.Y or auto
  int numa_node{};            // uring.numa_node: -1 leaves the process policy
  bool huge_pages{};          // uring.huge_pages
  bool prefault{};            // uring.prefault: touch the arena at start
  uint32_t queue_depth{};     // uring.queue_depth: reads in flight
  uint32_t request_bytes{};   // uring.request_bytes: largest read (4 KiB multiple)
  bool verify_checksums{};    // uring.verify_checksums: check staged objects
  bool share_fast_tier{};     // not a key: tempod backs the DRAM arena with a memfd
};

// The kmod device's keys (`kmod.<name>`): tempo.ko's device node.
struct KmodSettings {
  std::string path;  // kmod.path: /dev/tempoN
};

// tempod and its clients (`daemon.<name>`, Documentation/tempod.md).
struct DaemonSettings {
  std::string socket;        // daemon.socket: where tempod serves, where clients connect
  std::string engine;        // daemon.engine: a client's name in tempod ("" = "pid N")
  uint32_t socket_mode{};    // daemon.socket_mode: tempod's socket permissions
  std::string socket_group;  // daemon.socket_group: tempod's socket group ("" = its own)
  uint32_t max_queued{};     // daemon.max_queued: replies queued per client before backoff
  uint64_t max_put_bytes{};  // daemon.max_put_bytes: the largest object one put hands tempod
  // daemon.metrics_listen: tempod's HTTP metrics listener ("" off), its address (network
  // order, loopback) and port.
  std::string metrics_listen;
  uint32_t metrics_addr{};
  uint16_t metrics_port{};
  // daemon.shares: protected-capacity share weights of named engines ("a:1,b:3")
  std::map<std::string, uint32_t> shares;
  uint32_t default_share{};    // daemon.default_share: the weight of every other engine
  uint32_t max_connections{};  // daemon.max_connections: tempod's connections at once
  TimeNs hello_timeout{};      // daemon.hello_timeout: from accept to HELLO, else closed
};

// The cluster tier's keys (`cluster.<name>`): a pool shared by every host, below the store.
struct ClusterSettings {
  std::string backend;    // cluster.backend: off or rados
  std::string conf;       // cluster.conf: ceph.conf ("" = librados' default search)
  std::string pool;       // cluster.pool
  std::string client;     // cluster.client: the cephx user
  std::string prefix;     // cluster.prefix: object names' prefix (the deployment's namespace)
  double op_timeout_s{};  // cluster.op_timeout_s: every pool operation's bound
  bool keep_local{};      // cluster.keep_local: a copy of what is staged from the pool
};

// Every field is a key of the settings table (setting_keys()); its default is the table's.
struct Settings {
  Settings();  // the table's defaults

  std::string device;
  uint64_t fast_tier_bytes{};
  uint64_t budget_bytes{};
  PolicySpec policy;
  TimeNs tick_ns{};
  double staging_rate_bps{};
  uint32_t staging_slots{};
  TimeNs op_latency_ns{};
  double demand_rate_bps{};
  // Follows staging_rate until calibration_rate is given (set, file, environment or a
  // calibration file): TTRs start from the rate the sim device actually stages at.
  double calibration_rate_bps{};
  bool calibration_rate_given{};
  double static_rate_bps{};
  TimeNs rate_window_ns{};
  std::string eviction;
  std::string control_socket;    // a Unix socket path serving stats and claims; "" is off
  std::string calibration_file;  // measured rates (tempoctl calibrate) applied at set time
  UringSettings uring;
  KmodSettings kmod;
  DaemonSettings daemon;
  ClusterSettings cluster;
  // Keys given explicitly (set, file, environment): a calibration file fills only the rest.
  std::set<std::string> explicit_keys;

  // Sets one key of the table. On error returns -EINVAL and writes a message naming the
  // key and the accepted values (or, for an unknown key, the accepted keys) into `error`.
  int set(std::string_view key, std::string_view value, std::string* error);
  // As set(), without marking the key explicit (calibration values).
  int set_default(std::string_view key, std::string_view value, std::string* error);
  bool is_explicit(std::string_view key) const { return explicit_keys.count(std::string(key)); }
  // Cross-key checks (budget below the fast tier...). Same error convention.
  int validate(std::string* error) const;
};

// One row of the settings table: the parser, the defaults, Documentation/configuration.md
// (checked by tests/config) and `tempoctl config` all read it.
struct SettingKey {
  std::string_view key;            // "policy", "uring.store_path"
  std::string_view default_value;  // parsed like any value; "" leaves the key unset
  std::string_view when_unset;     // what an unset key means ("required", "off"...)
  std::string_view doc;            // what it accepts and does
  // Parses `value` into its field: 0, or -EINVAL with `error` naming the key.
  int (*apply)(Settings& s, std::string_view key, std::string_view value, std::string* error);
};
std::span<const SettingKey> setting_keys();
// The row of `key`, or nullptr.
const SettingKey* find_setting_key(std::string_view key);
// True for a configuration-file section that prefixes keys of the table ("uring").
bool is_setting_section(std::string_view name);
// The table as Markdown (key | default | accepted), as Documentation/configuration.md has it.
std::string settings_markdown();

// "4096", "64KiB", "8GiB", "1.5GB": bytes (binary and decimal suffixes). -1 if malformed.
int64_t parse_bytes(std::string_view text);
// "50ms", "2s", "100us", "250ns" or a plain number of milliseconds. -1 if malformed.
TimeNs parse_duration(std::string_view text);
// true/false, yes/no, on/off, 1/0. nullopt if none of them.
std::optional<bool> parse_bool(std::string_view text);

}  // namespace tempo
