// Every component's configuration built from the settings, in one place: the settings
// table (config/settings.h) holds each default once, and a component's struct defaults
// are the table's (tests/config/from_settings_test.cc compares each struct's defaults with
// what these build from Settings{}). Context, tempod and the tools build their components
// through these; a flag of a tool is a settings key.
#pragma once

#include "config/settings.h"
#include "controller/controller.h"
#include "device/sim_device.h"
#include "kmod/kmod_device.h"
#include "provider/provider.h"
#include "stack/sim_stack.h"
#include "stack/stack.h"
#include "store/object_store_options.h"
#include "uring/uring_device_options.h"

namespace tempo {

// The provider's staging slots are the device's unless `staging_slots` was given for a
// uring device (whose queue is its own).
ProviderConfig provider_config(const Settings& s);
ControllerConfig controller_config(const Settings& s);
StackConfig stack_config(const Settings& s);
SimDeviceConfig sim_device_config(const Settings& s);
SimStackConfig sim_stack_config(const Settings& s);
ObjectStoreOptions object_store_options(const Settings& s);
// Without the cluster tier (the caller opens it: cluster.backend) and the share flag.
UringDeviceOptions uring_device_options(const Settings& s);
KmodDeviceOptions kmod_device_options(const Settings& s);

}  // namespace tempo
