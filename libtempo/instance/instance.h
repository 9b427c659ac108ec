// One running TempoKV stack behind the C ABI: a device, the provider and the controller on
// the device's clock. The sim instance runs in virtual time driven by the caller; real
// devices run an event loop thread that takes the same mutex.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "config/settings.h"
#include "controller/controller.h"
#include "core/clock.h"
#include "device/device.h"
#include "provider/provider.h"

namespace tempo {

class Instance {
 public:
  virtual ~Instance() = default;
  virtual Controller& controller() = 0;
  virtual Provider& provider() = 0;
  virtual Device& device() = 0;
  virtual const Clock& clock() const = 0;
  // The sim device only: objects on the SSD tier, and virtual time. -EOPNOTSUPP elsewhere.
  virtual int sim_add_objects(std::span<const KvObject> objects);
  virtual int sim_advance(TimeNs ns);
  // Serialises every call into the stack (the C ABI and any event-loop thread).
  std::mutex& mutex() { return mutex_; }

 private:
  std::mutex mutex_;
};

// Builds the instance `settings` describe. On failure returns nullptr, a negative errno in
// *err and a message in *error.
std::unique_ptr<Instance> make_instance(const Settings& settings, int* err, std::string* error);

}  // namespace tempo
