// Reads every object of a store and checks its checksum: what `tempoctl store verify` does
// to a store at rest and tempod's STORE_VERIFY to its live one. A bad object is quarantined
// by the read (ObjectStore::get); the ones quarantined before count as bad too.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "store/object_store.h"

namespace tempo {

struct BadObject {
  ObjectKey key = 0;
  int error = 0;  // what reads of it return: -EBADMSG, -EIO
  std::string reason;
};

struct StoreVerification {
  uint64_t verified = 0;
  uint64_t verified_bytes = 0;
  std::vector<BadObject> bad;  // in key order, each key once
};

inline StoreVerification verify_objects(ObjectStore& store) {
  std::vector<ObjectInfo> objs = store.list();
  std::sort(objs.begin(), objs.end(), [](auto& a, auto& b) { return a.key < b.key; });
  StoreVerification v;
  for (const ObjectInfo& i : objs) {
    std::vector<std::byte> buf(i.size);
    const int64_t r = store.get(i.key, buf);
    if (r == static_cast<int64_t>(i.size)) {
      ++v.verified;
      v.verified_bytes += i.size;
    } else {
      const auto q = store.quarantined(i.key);
      v.bad.push_back({i.key, static_cast<int>(r),
                       q ? q->reason : std::string(std::strerror(static_cast<int>(-r)))});
    }
  }
  for (const QuarantinedObject& q : store.quarantined())
    if (std::none_of(v.bad.begin(), v.bad.end(),
                     [&](const BadObject& b) { return b.key == q.key; }))
      v.bad.push_back({q.key, q.error, q.reason});
  std::sort(v.bad.begin(), v.bad.end(), [](auto& a, auto& b) { return a.key < b.key; });
  return v;
}

}  // namespace tempo
