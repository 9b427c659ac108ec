// The physical tier capacities of one GPU's share of a server, from the hardware files:
//   HBM  = GPU memory x the serving engine's memory fraction - the model's weights (the
//          rest of the fraction is the activation reserve), from data/gpus and data/models;
//   DRAM, SSD = the KV share of host DRAM and of the NVMe drives, from data/hosts.
// In blocks, each tier holds floor(bytes / block bytes), so the same hardware gives a
// different shape for 16-token blocks than for a trace's 512-token blocks.
#pragma once

#include <cstdint>
#include <string>

#include "model/exec_model.h"
#include "placement/tiered_cache.h"

namespace tempo::placement {

struct HostSpec {
  std::string name;
  double hbm_memory_fraction = 0.9;  // of GPU memory; 1 - it is the activation reserve
  double dram_kv_gb = 0;             // 1e9 bytes
  double ssd_kv_gb = 0;
};

struct TierBytes {
  uint64_t hbm = 0, dram = 0, ssd = 0;
};

// Reads a host definition: `host` is a file path (contains '/' or ends in ".json") or a name
// looked up as <data_dir>/hosts/<host>.json. Keys: name, notes (optional),
// hbm_memory_fraction in (0, 1], dram_kv_gb and ssd_kv_gb >= 0; unknown keys are refused.
// Returns 0 or a negative errno with *error naming the file and key.
int load_host_spec(const std::string& host, const std::string& data_dir, HostSpec* out,
                   std::string* error);

// -EINVAL when the host's numbers are out of range (fraction in (0, 1], sizes >= 0).
int physical_tier_bytes(const ExecModel& model, const HostSpec& host, TierBytes* out);
// Blocks of `block_bytes` (> 0) that fit in each tier.
TierShape shape_for_bytes(const TierBytes& bytes, uint64_t block_bytes);

}  // namespace tempo::placement
