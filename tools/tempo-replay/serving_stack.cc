#include "serving_stack.h"

namespace tempo {

uint64_t ServingStack::copy_out(std::span<const ObjectKey> /*keys*/) { return 0; }

int ServingStack::read_ordinary(std::span<const ObjectKey> keys, bool /*dax_l1*/,
                                std::function<void(int)> done) {
  return device().demand_read(keys, std::move(done));
}

int SimServingStack::preload(const KvObject& object, std::string* error) {
  const int r = rt_.device.add_object(object.key, object.bytes);
  if (r != 0)
    *error = "object " + std::to_string(object.key) + " preloaded twice or with zero bytes";
  return r;
}

void SimServingStack::run(const std::function<bool()>& /*done*/) { rt_.events.run_all(); }

}  // namespace tempo
