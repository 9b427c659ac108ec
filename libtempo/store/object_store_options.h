// How an object store is opened (store/object_store.h); built from the settings by
// config/from_settings.h, which reads this header without liburing.
#pragma once

#include <cstdint>
#include <string>

namespace tempo {

struct ObjectStoreOptions {
  std::string dir;        // holds the catalog, and the data file unless data_path is set
  std::string data_path;  // a file or block device for object data; default <dir>/data
  // 0: the data file grows as needed (bounded by the file system). Otherwise a fixed-size
  // store: the data file is preallocated to this size and put() fails with -ENOSPC when
  // no free extent fits.
  uint64_t capacity_bytes = 0;
  bool sync = false;      // fdatasync before put()/remove() return
  bool direct_io = true;  // O_DIRECT data; buffered where the file system refuses it
  uint32_t queue_depth = 16;
  uint32_t request_bytes = 1u << 20;
  // Inspection: the files are opened read-only and nothing is created, cut or compacted;
  // put(), remove(), sync() and compact() return -EROFS. A missing catalog is -ENOENT.
  bool read_only = false;
  friend bool operator==(const ObjectStoreOptions&, const ObjectStoreOptions&) = default;
};

}  // namespace tempo
