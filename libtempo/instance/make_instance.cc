#include <cerrno>
#include <stdexcept>

#include "instance/instance.h"
#include "instance/sim_instance.h"
#ifndef TEMPO_WITHOUT_URING
#include "instance/uring_instance.h"
#endif

namespace tempo {

std::unique_ptr<Instance> make_instance(const Settings& s, int* err, std::string* error) {
  if (const int r = s.validate(error); r != 0) {
    *err = r;
    return nullptr;
  }
  try {
    if (s.device == "uring") {
#ifdef TEMPO_WITHOUT_URING
      *err = -EOPNOTSUPP;
      *error = "device 'uring' is not available: libtempo was built without liburing";
      return nullptr;
#else
      std::unique_ptr<Instance> in;
      *err = UringInstance::create(s, &in, error);
      return in;
#endif
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
    return std::make_unique<SimInstance>(c);
  } catch (const std::invalid_argument& e) {
    *err = -EINVAL;
    *error = e.what();
    return nullptr;
  }
}

}  // namespace tempo
