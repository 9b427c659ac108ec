// The sim device on the virtual driver with its Stack: a whole TempoKV stack in virtual
// time, owned by one thread. Tests, tempo-replay's sim runs and the studies build it.
#pragma once

#include <stdexcept>
#include <string>

#include "device/sim_device.h"
#include "stack/stack.h"
#include "stack/virtual_driver.h"

namespace tempo {

struct SimStackConfig {
  SimDeviceConfig device;
  ProviderConfig provider;
  ControllerConfig controller;
  std::optional<SimRemote> remote;  // a cluster pool beside the SSD tier
};

class SimStack {
 public:
  // Throws std::invalid_argument on an invalid configuration (this scaffold of tests and
  // studies; a context returns SimDevice::validate's -EINVAL and message instead).
  explicit SimStack(const SimStackConfig& config)
      : device(driver, checked(config).device, config.remote),
        stack(driver, driver.clock(), device, StackConfig{config.provider, config.controller}) {}

  VirtualDriver driver;
  SimDevice device;
  Stack stack;

 private:
  static const SimStackConfig& checked(const SimStackConfig& config) {
    if (std::string why; SimDevice::validate(config.device, config.remote, &why) != 0)
      throw std::invalid_argument(why);
    return config;
  }
};

}  // namespace tempo
