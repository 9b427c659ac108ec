// A GPU as the roofline model sees it: peak dense compute, HBM bandwidth, host-link
// bandwidth, each derated by an efficiency factor, and a fixed per-iteration overhead.
// Definitions live in data files (data/gpus/*.json) so users can add their own.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tempo {

struct GpuSpec {
  std::string name;
  double peak_tflops = 0;               // dense tensor-core peak for the model's dtype, 1e12 FLOP/s
  double hbm_bandwidth_gbps = 0;        // 1e9 bytes/s
  double host_link_bandwidth_gbps = 0;  // host-to-GPU, one direction, 1e9 bytes/s
  double compute_efficiency = 1;        // achieved / peak, in (0, 1]
  double hbm_efficiency = 1;
  double host_link_efficiency = 1;
  double iteration_overhead_us = 0;  // launch + scheduling cost of one forward pass
  double hbm_capacity_gb = 0;        // 1e9 bytes

  double effective_flops() const { return peak_tflops * 1e12 * compute_efficiency; }
  double effective_hbm_bps() const { return hbm_bandwidth_gbps * 1e9 * hbm_efficiency; }
  double effective_host_link_bps() const {
    return host_link_bandwidth_gbps * 1e9 * host_link_efficiency;
  }
};

// Parses a GPU definition. `source` names the file in error messages. Returns 0, or -EINVAL
// with *error naming the source and the offending key.
int parse_gpu_spec(std::string_view json_text, std::string_view source, GpuSpec* out,
                   std::string* error);
// Loads a GPU definition file: 0, -ENOENT/-EACCES (unreadable) or -EINVAL (bad content).
int load_gpu_spec(const std::string& path, GpuSpec* out, std::string* error);

}  // namespace tempo
