// Persistent KV object store: objects by key in a data file (or block device) written and
// read with O_DIRECT through io_uring, and a catalog (key -> extent, size, checksum) kept as
// an append-only log of checksummed records, replayed on open.
//
// Durability (see Documentation/object-store.md): an object's data is written before its
// catalog record, so a crash never yields a catalog entry for data that was not written
// (and every read verifies the object checksum, so stale or torn data is never served).
// With `sync`, put() and remove() return after fdatasync of the data and then the catalog:
// the operation survives a crash. Without it, sync() makes every earlier operation durable;
// a crash may lose operations after the last sync().
//
// Thread-safe: catalog state under one lock, store I/O serialised on one ring.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/object.h"
#include "fasttier/extent_allocator.h"
#include "store/catalog_record.h"
#include "store/object_store_options.h"
#include "uring/io_ring.h"

namespace tempo {

struct ObjectInfo {
  ObjectKey key = 0;
  uint64_t offset = 0;  // extent start in the data file (a multiple of kStoreBlockSize)
  uint64_t size = 0;    // object bytes; the extent is size rounded up to kStoreBlockSize
  uint64_t checksum = 0;
  uint64_t seq = 0;  // catalog sequence of the put that wrote this version
  friend bool operator==(const ObjectInfo&, const ObjectInfo&) = default;
};

struct QuarantinedObject {
  ObjectKey key = 0;
  int error = 0;  // what reads of it return: -EBADMSG or -EIO
  std::string reason;
};

struct RecoveryReport {
  uint64_t records = 0;       // valid records replayed
  uint64_t live_objects = 0;  // readable objects after replay
  // Bytes a crash can leave after the last record: a partial record, or whole records of
  // zeros (the file grew, the data never landed). Ignored, and cut off unless read-only.
  uint64_t torn_tail_bytes = 0;
  // Whole records that fail their checks (a bit flip), the last one included: reported,
  // their object quarantined when the record still names it; never cut off.
  uint64_t damaged_records = 0;
  std::vector<std::string> errors;  // one line per problem found
};

inline constexpr uint64_t kStoreBlockSize = 4096;

// The pid of the process holding the lock of the store at `dir`, 0 if none holds it.
pid_t store_lock_holder(const std::string& dir);

class ObjectStore {
 public:
  // Opens (creating if needed) the store and replays its catalog. Problems in the catalog
  // or data file do not fail the open: they are listed in the report and the affected
  // objects are quarantined. Returns 0 or a negative errno (unusable paths, I/O errors;
  // -EBUSY: another open store holds the directory's lock, store_lock_holder() names it;
  // -EUCLEAN when the catalog is missing beside a data file that holds data: a new catalog
  // would let puts overwrite those objects). `report` is filled on failure too. Read-only
  // opens take no lock.
  static int open(const ObjectStoreOptions& options, std::unique_ptr<ObjectStore>* out,
                  RecoveryReport* report = nullptr);
  ~ObjectStore();
  ObjectStore(const ObjectStore&) = delete;
  ObjectStore& operator=(const ObjectStore&) = delete;

  // Stores `data` under `key`, replacing any earlier version. 0, -EINVAL (empty data),
  // -ENOSPC / -EFBIG (no room; the catalog is unchanged), -EROFS (read-only), -EOVERFLOW
  // (catalog sequences exhausted: kCatalogSeqLimit) or an I/O error.
  int put(ObjectKey key, std::span<const std::byte> data);
  // Reads the object into `out` and verifies its checksum: the size, -ENOENT, -EMSGSIZE
  // (out too small), -EBADMSG (quarantined, or checksum mismatch: then quarantined) or
  // -EIO (data missing: then quarantined).
  int64_t get(ObjectKey key, std::span<std::byte> out);
  // Deletes `key` (also a quarantined one): 0, -ENOENT, -EROFS or -EOVERFLOW.
  int remove(ObjectKey key);
  // Makes every earlier put()/remove() durable.
  int sync();
  // Rewrites the catalog with one record per live object (atomically, by rename).
  int compact();

  std::optional<ObjectInfo> lookup(ObjectKey key) const;
  std::vector<ObjectInfo> list() const;
  size_t size() const;
  std::optional<QuarantinedObject> quarantined(ObjectKey key) const;
  std::vector<QuarantinedObject> quarantined() const;

  // A read lease for readers that do their own I/O on data_fd() (the staging engine): the
  // extent is not reused until release(), even if the object is deleted or replaced.
  // 0, -ENOENT, or the quarantine error.
  int acquire(ObjectKey key, ObjectInfo* info);
  void release(const ObjectInfo& info);
  // A reader found `info`'s data bad: quarantines that version (not a newer one).
  void quarantine(const ObjectInfo& info, int error, std::string reason);

  int data_fd() const { return data_fd_; }
  bool direct_io() const { return direct_; }
  uint64_t catalog_bytes() const;
  FragmentationStats space() const;
  const RecoveryReport& recovery() const { return recovery_; }
  // Test hook on the store's own reads and writes.
  void set_fault_hook(IoFaultHook hook);

 private:
  explicit ObjectStore(const ObjectStoreOptions& options);
  int open_files();
  int replay();
  int append_locked(const CatalogRecord& r);
  void free_extent_locked(uint64_t offset, uint64_t size);
  void quarantine_locked(ObjectKey key, int error, std::string reason);
  int data_io(IoRequest::Op op, void* buf, uint64_t len, uint64_t offset);

  ObjectStoreOptions options_;
  std::string catalog_path_;
  int lock_fd_ = -1;  // holds the exclusive lock on <dir>/lock while open
  int data_fd_ = -1;
  int catalog_fd_ = -1;
  bool direct_ = false;
  bool growable_ = true;
  RecoveryReport recovery_;

  mutable std::mutex mu_;
  uint64_t catalog_size_ = 0;                                    // guarded by mu_
  uint64_t next_seq_ = 1;                                        // guarded by mu_
  std::unordered_map<ObjectKey, ObjectInfo> live_;               // guarded by mu_
  std::unordered_map<ObjectKey, QuarantinedObject> quarantine_;  // guarded by mu_
  struct Lease {
    uint32_t readers = 0;
    uint64_t free_size = 0;  // > 0: freed while leased, released by the last reader
  };
  std::map<uint64_t, Lease> leases_;        // by extent offset; guarded by mu_
  std::unique_ptr<ExtentAllocator> space_;  // guarded by mu_

  std::mutex io_mu_;
  std::unique_ptr<IoRing> ring_;  // guarded by io_mu_
};

}  // namespace tempo
