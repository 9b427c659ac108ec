#include "store/idempotent_put.h"

#include <cerrno>
#include <cstring>
#include <vector>

#include "store/checksum.h"
#include "store/object_store.h"

namespace tempo {

int put_idempotent(ObjectStore& store, ObjectKey key, std::span<const std::byte> data) {
  if (data.empty()) return -EINVAL;
  const auto held = store.lookup(key);
  if (!held) return store.put(key, data);
  if (held->size != data.size() || held->checksum != checksum64(data.data(), data.size()))
    return -EEXIST;
  std::vector<std::byte> stored(data.size());
  const int64_t n = store.get(key, stored);
  if (n == -ENOENT) return store.put(key, data);  // deleted meanwhile
  if (n < 0) return static_cast<int>(n);
  return std::memcmp(stored.data(), data.data(), data.size()) == 0 ? 0 : -EEXIST;
}

}  // namespace tempo
