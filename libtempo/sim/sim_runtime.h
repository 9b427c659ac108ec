// A whole TempoKV stack in virtual time: clock, event queue, sim device, provider and
// controller, with the controller's periodic tick scheduled while claims are PLANNED.
// Used by tests, tempo-replay and the C ABI's sim mode.
#pragma once

#include "controller/controller.h"
#include "controller/periodic_tick.h"
#include "core/event_queue.h"
#include "device/sim_device.h"
#include "provider/provider.h"

namespace tempo {

struct SimRuntimeConfig {
  SimDeviceConfig device;
  ProviderConfig provider;
  ControllerConfig controller;
};

class SimRuntime {
 public:
  explicit SimRuntime(const SimRuntimeConfig& config)
      : device(events, config.device),
        provider(device, clock, config.provider),
        controller(provider, clock, config.controller) {}

  VirtualClock clock;
  EventQueue events{clock};
  SimDevice device;
  Provider provider;
  Controller controller;
  PeriodicTick tick{events, controller};
};

}  // namespace tempo
