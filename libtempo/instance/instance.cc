#include "instance/instance.h"

#include <cerrno>
#include <stdexcept>

#include "sim/sim_runtime.h"

namespace tempo {

int Instance::sim_add_objects(std::span<const KvObject> /*objects*/) { return -EOPNOTSUPP; }
int Instance::sim_advance(TimeNs /*ns*/) { return -EOPNOTSUPP; }

namespace {

class SimInstance final : public Instance {
 public:
  explicit SimInstance(const SimRuntimeConfig& c) : rt_(c) {}
  Controller& controller() override { return rt_.controller; }
  Provider& provider() override { return rt_.provider; }
  Device& device() override { return rt_.device; }
  const Clock& clock() const override { return rt_.clock; }

  int sim_add_objects(std::span<const KvObject> objects) override {
    for (size_t i = 0; i < objects.size(); ++i) {
      if (objects[i].bytes == 0) return -EINVAL;
      if (rt_.device.object_size(objects[i].key) >= 0) return -EEXIST;
      for (size_t j = 0; j < i; ++j)
        if (objects[j].key == objects[i].key) return -EEXIST;
    }
    for (const KvObject& o : objects) rt_.device.add_object(o.key, o.bytes);
    return 0;
  }

  int sim_advance(TimeNs ns) override {
    if (ns < 0) return -EINVAL;
    rt_.events.run_until(rt_.clock.now() + ns);
    return 0;
  }

 private:
  SimRuntime rt_;
};

}  // namespace

std::unique_ptr<Instance> make_instance(const Settings& s, int* err, std::string* error) {
  if (const int r = s.validate(error); r != 0) {
    *err = r;
    return nullptr;
  }
  if (s.device != "sim") {
    *err = -EOPNOTSUPP;
    *error = "device '" + s.device + "' is not available through this library build";
    return nullptr;
  }
  SimRuntimeConfig c;
  c.device = SimDeviceConfig{s.fast_tier_bytes, s.staging_rate_bps, s.staging_slots,
                             s.op_latency_ns,   s.demand_rate_bps,  s.eviction};
  c.provider = ProviderConfig{s.budget_bytes, s.calibration_rate_bps, s.static_rate_bps,
                              s.rate_window_ns, 0};
  c.controller = ControllerConfig{s.policy, s.tick_ns};
  try {
    return std::make_unique<SimInstance>(c);
  } catch (const std::invalid_argument& e) {
    *err = -EINVAL;
    *error = e.what();
    return nullptr;
  }
}

}  // namespace tempo
