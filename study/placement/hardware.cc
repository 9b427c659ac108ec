#include "placement/hardware.h"

#include <cerrno>

#include "core/text_file.h"
#include "model/spec_json.h"

namespace tempo::placement {

int load_host_spec(const std::string& host, const std::string& data_dir, HostSpec* out,
                   std::string* error) {
  const bool is_path = host.find('/') != std::string::npos ||
                       (host.size() > 5 && host.compare(host.size() - 5, 5, ".json") == 0);
  const std::string path = is_path ? host : data_dir + "/hosts/" + host + ".json";
  std::string text;
  if (int rc = read_text_file(path, "host spec", &text, error); rc != 0) return rc;
  nlohmann::json j;
  if (int rc = spec_json::parse_object(text, path, &j, error); rc != 0) return rc;
  HostSpec h;
  std::string notes;
  spec_json::Reader r(j, path, error);
  r.text("name", true, &h.name);
  r.text("notes", false, &notes);
  r.fraction("hbm_memory_fraction", true, &h.hbm_memory_fraction);
  r.non_negative("dram_kv_gb", true, &h.dram_kv_gb);
  r.non_negative("ssd_kv_gb", true, &h.ssd_kv_gb);
  r.reject_unknown_keys();
  if (!r.ok()) return -EINVAL;
  *out = std::move(h);
  return 0;
}

int physical_tier_bytes(const ExecModel& model, const HostSpec& host, TierBytes* out) {
  if (!(host.hbm_memory_fraction > 0 && host.hbm_memory_fraction <= 1) || !(host.dram_kv_gb >= 0) ||
      !(host.ssd_kv_gb >= 0)) {
    return -EINVAL;
  }
  out->hbm = model.kv_cache_capacity_tokens(host.hbm_memory_fraction) * model.kv_bytes_per_token();
  out->dram = static_cast<uint64_t>(host.dram_kv_gb * 1e9);
  out->ssd = static_cast<uint64_t>(host.ssd_kv_gb * 1e9);
  return 0;
}

TierShape shape_for_bytes(const TierBytes& bytes, uint64_t block_bytes) {
  return {bytes.hbm / block_bytes, bytes.dram / block_bytes, bytes.ssd / block_bytes};
}

}  // namespace tempo::placement
