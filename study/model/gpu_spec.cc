#include "model/gpu_spec.h"

#include <cerrno>

#include "core/text_file.h"
#include "model/spec_json.h"

namespace tempo {

int parse_gpu_spec(std::string_view json_text, std::string_view source, GpuSpec* out,
                   std::string* error) {
  nlohmann::json j;
  if (int rc = spec_json::parse_object(json_text, source, &j, error); rc != 0) return rc;
  GpuSpec g;
  spec_json::Reader r(j, source, error);
  std::string notes;
  r.text("name", true, &g.name);
  r.text("notes", false, &notes);
  r.positive("peak_dense_tflops", true, &g.peak_tflops);
  r.positive("hbm_bandwidth_gbps", true, &g.hbm_bandwidth_gbps);
  r.positive("host_link_bandwidth_gbps", true, &g.host_link_bandwidth_gbps);
  r.positive("hbm_capacity_gb", true, &g.hbm_capacity_gb);
  r.fraction("compute_efficiency", true, &g.compute_efficiency);
  r.fraction("hbm_efficiency", true, &g.hbm_efficiency);
  r.fraction("host_link_efficiency", true, &g.host_link_efficiency);
  r.non_negative("iteration_overhead_us", true, &g.iteration_overhead_us);
  r.reject_unknown_keys();
  if (!r.ok()) return -EINVAL;
  *out = std::move(g);
  return 0;
}

int load_gpu_spec(const std::string& path, GpuSpec* out, std::string* error) {
  std::string text;
  if (int rc = read_text_file(path, "GPU spec", &text, error); rc != 0) return rc;
  return parse_gpu_spec(text, path, out, error);
}

}  // namespace tempo
