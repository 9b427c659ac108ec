// The sim device behind the C ABI: virtual time that only the caller moves
// (sim_advance), or that waiting for a claim runs forward one event at a time.
#pragma once

#include "instance/instance.h"
#include "sim/sim_runtime.h"

namespace tempo {

class SimInstance final : public ControllerInstance {
 public:
  explicit SimInstance(const SimRuntimeConfig& config);
  std::string_view device_kind() const override { return "sim"; }
  int sim_add_objects(std::span<const KvObject> objects) override;
  int sim_advance(TimeNs ns) override;
  // The sim device holds no bytes.
  int extents(ClaimId, std::vector<std::span<const std::byte>>*) override { return -EOPNOTSUPP; }

 private:
  bool advance_locked(std::unique_lock<std::mutex>& lock, TimeNs deadline) override;

  SimRuntime rt_;
};

}  // namespace tempo
