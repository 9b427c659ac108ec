#include "store/object_store.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "store/aligned_buffer.h"
#include "store/checksum.h"

namespace tempo {
namespace {

// A growable store's address space: the data file is sparse and grows on write.
constexpr uint64_t kGrowableSpace = uint64_t{1} << 50;

int open_data(const std::string& path, bool direct, bool read_only, bool* direct_used) {
  const int flags = read_only ? O_RDONLY | O_CLOEXEC : O_RDWR | O_CREAT | O_CLOEXEC;
  if (direct) {
    int fd = ::open(path.c_str(), flags | O_DIRECT, 0644);
    if (fd >= 0) {
      *direct_used = true;
      return fd;
    }
    if (errno != EINVAL) return -errno;  // EINVAL: the file system has no O_DIRECT
  }
  *direct_used = false;
  int fd = ::open(path.c_str(), flags, 0644);
  return fd >= 0 ? fd : -errno;
}

int64_t device_or_file_size(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return -errno;
  if (S_ISBLK(st.st_mode)) {
    uint64_t bytes = 0;
    if (ioctl(fd, BLKGETSIZE64, &bytes) != 0) return -errno;
    return static_cast<int64_t>(bytes);
  }
  return st.st_size;
}

int fsync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  int ret = fsync(fd) == 0 ? 0 : -errno;
  close(fd);
  return ret;
}

__attribute__((format(printf, 1, 2))) std::string strprintf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char buf[512];
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

// What a store file's path holds when that is not a store file: a regular file, a block
// device where `block_ok` (the data), or nothing yet. Empty when it is fine or absent.
std::string not_a_store_file(const std::string& path, bool block_ok) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return {};
  if (S_ISREG(st.st_mode) || (block_ok && S_ISBLK(st.st_mode))) return {};
  const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                     : S_ISFIFO(st.st_mode) ? "a FIFO"
                     : S_ISCHR(st.st_mode)  ? "a character device"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                                            : "not a file";
  return strprintf("'%s' is %s, not a regular file%s", path.c_str(), kind,
                   block_ok ? " or a block device" : "");
}

using ull = unsigned long long;

int write_all(int fd, const void* buf, size_t len, uint64_t offset, size_t* written) {
  *written = 0;
  while (*written < len) {
    ssize_t n = pwrite(fd, static_cast<const char*>(buf) + *written, len - *written,
                       static_cast<off_t>(offset + *written));
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (n == 0) return -EIO;
    *written += static_cast<size_t>(n);
  }
  return 0;
}

// Takes the store's exclusive lock: an OFD write lock on <dir>/lock (held by this open
// file, so a second opener in the same process is refused too), then records our pid in
// it for the refusal's message. The lock's fd, or -EBUSY (held elsewhere) or -errno.
int lock_store(const std::string& dir) {
  const int fd = ::open((dir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return -errno;
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
    const int err = errno;
    close(fd);
    return err == EAGAIN || err == EACCES ? -EBUSY : -err;
  }
  const std::string pid = std::to_string(getpid()) + "\n";
  size_t written = 0;
  if (ftruncate(fd, 0) != 0) {
    const int err = errno;
    close(fd);
    return -err;
  }
  if (const int r = write_all(fd, pid.data(), pid.size(), 0, &written); r != 0) {
    close(fd);
    return r;
  }
  return fd;
}

}  // namespace

pid_t store_lock_holder(const std::string& dir) {
  const int fd = ::open((dir + "/lock").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[32] = {};
  const ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  const bool held = fcntl(fd, F_OFD_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
  close(fd);
  return held && n > 0 ? static_cast<pid_t>(std::atol(buf)) : 0;
}

ObjectStore::ObjectStore(const ObjectStoreOptions& options) : options_(options) {}

ObjectStore::~ObjectStore() {
  ring_.reset();
  if (lock_fd_ >= 0) close(lock_fd_);
  if (data_fd_ >= 0) close(data_fd_);
  if (catalog_fd_ >= 0) close(catalog_fd_);
}

int ObjectStore::open(const ObjectStoreOptions& options, std::unique_ptr<ObjectStore>* out,
                      RecoveryReport* report) {
  if (options.dir.empty() || options.queue_depth == 0 || options.request_bytes == 0 ||
      options.request_bytes % kStoreBlockSize != 0)
    return -EINVAL;
  std::unique_ptr<ObjectStore> s(new ObjectStore(options));
  int ret = s->open_files();
  if (ret == 0) ret = IoRing::create(options.queue_depth, &s->ring_);
  if (ret == 0) ret = s->replay();
  if (ret < 0) {
    if (report != nullptr) *report = s->recovery_;
    return ret;
  }
  if (report != nullptr) *report = s->recovery_;
  *out = std::move(s);
  return 0;
}

int ObjectStore::open_files() {
  const bool ro = options_.read_only;
  if (!ro) {
    if (mkdir(options_.dir.c_str(), 0755) != 0 && errno != EEXIST) return -errno;
    lock_fd_ = lock_store(options_.dir);
    if (lock_fd_ < 0) return lock_fd_;
  }
  const std::string data_path =
      options_.data_path.empty() ? options_.dir + "/data" : options_.data_path;
  catalog_path_ = options_.dir + "/catalog";
  const bool had_catalog = access(catalog_path_.c_str(), F_OK) == 0;
  // Checked before either is opened: opening a FIFO would block.
  for (const auto& [path, block_ok] : {std::pair{catalog_path_, false}, std::pair{data_path, true}})
    if (std::string why = not_a_store_file(path, block_ok); !why.empty()) {
      recovery_.errors.push_back(std::move(why));
      return -EINVAL;
    }
  data_fd_ = open_data(data_path, options_.direct_io, ro, &direct_);
  if (data_fd_ < 0) return data_fd_;
  struct stat st {};
  if (fstat(data_fd_, &st) != 0) return -errno;
  // Both files are created together: a data file with data and no catalog lost its catalog,
  // and an empty new one would let puts overwrite the objects.
  if (!had_catalog && S_ISREG(st.st_mode) && st.st_size > 0) {
    recovery_.errors.push_back(strprintf(
        "the catalog '%s' is missing beside the data file '%s' (%lld bytes): refusing to open "
        "an empty store over its objects; restore the catalog, or remove the data file",
        catalog_path_.c_str(), data_path.c_str(), static_cast<long long>(st.st_size)));
    return -EUCLEAN;
  }
  catalog_fd_ =
      ::open(catalog_path_.c_str(), ro ? O_RDONLY | O_CLOEXEC : O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (catalog_fd_ < 0) return -errno;

  uint64_t space = kGrowableSpace;
  if (S_ISBLK(st.st_mode)) {
    const int64_t dev = device_or_file_size(data_fd_);
    if (dev < 0) return static_cast<int>(dev);
    space = options_.capacity_bytes > 0
                ? std::min<uint64_t>(options_.capacity_bytes, static_cast<uint64_t>(dev))
                : static_cast<uint64_t>(dev);
    growable_ = false;
  } else if (options_.capacity_bytes > 0) {
    space = options_.capacity_bytes;
    growable_ = false;
    if (!ro && static_cast<uint64_t>(st.st_size) < space) {
      int ret = posix_fallocate(data_fd_, 0, static_cast<off_t>(space));
      if (ret != 0) return -ret;
    }
  }
  space_ = std::make_unique<ExtentAllocator>(space, kStoreBlockSize);
  return 0;
}

int ObjectStore::replay() {
  const int64_t cat_size = device_or_file_size(catalog_fd_);
  if (cat_size < 0) return static_cast<int>(cat_size);
  const size_t n = static_cast<size_t>(cat_size) / kCatalogRecordSize;
  std::vector<uint8_t> bytes(n * kCatalogRecordSize);
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t r = pread(catalog_fd_, bytes.data() + got, bytes.size() - got, static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -errno;
    if (r == 0) return -EIO;
    got += static_cast<size_t>(r);
  }
  std::vector<DecodedRecord> recs(n);
  // Records [0, kept) end with the last one that holds anything: a whole record that fails
  // its checks is damage (a 64-byte append never straddles a sector, so a crash leaves it
  // whole or absent), reported and kept; only zeros and a partial record are a torn tail.
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* at = bytes.data() + i * kCatalogRecordSize;
    recs[i] = decode_record(std::span<const uint8_t, kCatalogRecordSize>(at, kCatalogRecordSize));
    if (recs[i].state == RecordState::kValid ||
        std::any_of(at, at + kCatalogRecordSize, [](uint8_t b) { return b != 0; }))
      kept = i + 1;
  }

  RecoveryReport& rep = recovery_;
  for (size_t i = 0; i < kept; ++i) {
    const DecodedRecord& d = recs[i];
    const CatalogRecord& r = d.record;
    if (d.state == RecordState::kValid) {
      ++rep.records;
      next_seq_ = std::max(next_seq_, r.seq + 1);
      quarantine_.erase(r.key);  // a later valid record decides the object's state
      if (r.type == RecordType::kPut)
        live_[r.key] = ObjectInfo{r.key, r.offset, r.size, r.checksum, r.seq};
      else
        live_.erase(r.key);
      continue;
    }
    ++rep.damaged_records;
    if (d.state == RecordState::kDamagedKnownKey) {
      std::string why = strprintf(
          "catalog record %zu (byte %zu) is damaged or out of range (seq %llu); it "
          "belonged to object %#llx",
          i, i * kCatalogRecordSize, static_cast<ull>(r.seq), static_cast<ull>(r.key));
      rep.errors.push_back(why);
      live_.erase(r.key);
      quarantine_[r.key] = QuarantinedObject{r.key, -EBADMSG, std::move(why)};
    } else {
      rep.errors.push_back(
          strprintf("catalog record %zu (byte %zu) is damaged beyond naming its object; objects it "
                    "changed are caught by extent overlap and checksum checks",
                    i, i * kCatalogRecordSize));
    }
  }

  const uint64_t kept_bytes = kept * kCatalogRecordSize;
  rep.torn_tail_bytes = static_cast<uint64_t>(cat_size) - kept_bytes;
  if (rep.torn_tail_bytes > 0) {
    rep.errors.push_back(strprintf("torn catalog tail: %llu bytes after the last record ignored",
                                   static_cast<ull>(rep.torn_tail_bytes)));
    // Cut it so records appended from now on follow a whole one.
    if (!options_.read_only && ftruncate(catalog_fd_, static_cast<off_t>(kept_bytes)) != 0)
      return -errno;
  }
  catalog_size_ = kept_bytes;

  const int64_t data_size = device_or_file_size(data_fd_);
  if (data_size < 0) return static_cast<int>(data_size);
  // Newest first: when two extents overlap (a damaged delete record hid a reuse), the
  // older object is the stale one.
  std::vector<ObjectInfo> by_age;
  by_age.reserve(live_.size());
  for (const auto& [k, info] : live_) by_age.push_back(info);
  std::sort(by_age.begin(), by_age.end(),
            [](const ObjectInfo& a, const ObjectInfo& b) { return a.seq > b.seq; });
  for (const ObjectInfo& info : by_age) {
    const uint64_t end = info.offset + space_->round_up(info.size);
    if (end > static_cast<uint64_t>(data_size)) {
      quarantine_locked(info.key, -EIO,
                        strprintf("object %#llx: the data file is shorter than the catalog says "
                                  "(extent ends at %llu, file has %lld bytes)",
                                  static_cast<ull>(info.key), static_cast<ull>(end),
                                  static_cast<long long>(data_size)));
      rep.errors.push_back(quarantine_[info.key].reason);
      continue;
    }
    if (space_->reserve(info.offset, info.size) != 0) {
      quarantine_locked(info.key, -EBADMSG,
                        strprintf("object %#llx: extent [%llu, %llu) is invalid or overlaps a "
                                  "newer object",
                                  static_cast<ull>(info.key), static_cast<ull>(info.offset),
                                  static_cast<ull>(end)));
      rep.errors.push_back(quarantine_[info.key].reason);
    }
  }
  rep.live_objects = live_.size();
  if (!options_.read_only && rep.records > 4 * live_.size() + 4096 && quarantine_.empty())
    return compact();
  return 0;
}

void ObjectStore::quarantine_locked(ObjectKey key, int error, std::string reason) {
  live_.erase(key);
  quarantine_[key] = QuarantinedObject{key, error, std::move(reason)};
}

int ObjectStore::append_locked(const CatalogRecord& r) {
  if (r.seq >= kCatalogSeqLimit) return -EOVERFLOW;
  std::array<uint8_t, kCatalogRecordSize> buf{};
  encode_record(r, buf);
  size_t written = 0;
  int ret = write_all(catalog_fd_, buf.data(), buf.size(), catalog_size_, &written);
  if (ret < 0) {
    // A partly written record would be a torn tail under later appends: cut it now.
    if (written > 0 && ftruncate(catalog_fd_, static_cast<off_t>(catalog_size_)) != 0)
      return -errno;
    return ret;
  }
  if (options_.sync && fdatasync(catalog_fd_) != 0) {
    ret = -errno;
    if (ftruncate(catalog_fd_, static_cast<off_t>(catalog_size_)) != 0) return -errno;
    return ret;
  }
  catalog_size_ += kCatalogRecordSize;
  return 0;
}

void ObjectStore::free_extent_locked(uint64_t offset, uint64_t size) {
  auto it = leases_.find(offset);
  if (it != leases_.end()) {
    it->second.free_size = size;
    return;
  }
  space_->release(offset, size);
}

int ObjectStore::data_io(IoRequest::Op op, void* buf, uint64_t len, uint64_t offset) {
  std::vector<IoRequest> reqs;
  for (uint64_t done = 0; done < len; done += options_.request_bytes) {
    IoRequest r;
    r.op = op;
    r.fd = data_fd_;
    r.buf = static_cast<std::byte*>(buf) + done;
    r.len = static_cast<uint32_t>(std::min<uint64_t>(options_.request_bytes, len - done));
    r.offset = offset + done;
    reqs.push_back(r);
  }
  std::lock_guard io(io_mu_);
  return ring_->run(reqs);
}

int ObjectStore::put(ObjectKey key, std::span<const std::byte> data) {
  if (options_.read_only) return -EROFS;
  if (data.empty()) return -EINVAL;
  int64_t off;
  uint64_t padded;
  {
    std::lock_guard lock(mu_);
    off = space_->allocate(data.size());
    if (off < 0) return static_cast<int>(off);
    padded = space_->round_up(data.size());
  }
  const auto offset = static_cast<uint64_t>(off);
  auto undo = [&](int err) {
    std::lock_guard lock(mu_);
    space_->release(offset, data.size());
    return err;
  };
  AlignedBuffer buf = make_aligned_buffer(padded);
  if (!buf) return undo(-ENOMEM);
  std::memcpy(buf.get(), data.data(), data.size());
  std::memset(buf.get() + data.size(), 0, padded - data.size());
  const uint64_t sum = checksum64(data.data(), data.size());

  int ret = data_io(IoRequest::Op::kWrite, buf.get(), padded, offset);
  if (ret < 0) return undo(ret);
  if (options_.sync && fdatasync(data_fd_) != 0) return undo(-errno);

  std::lock_guard lock(mu_);
  const CatalogRecord rec{RecordType::kPut, key, next_seq_, offset, data.size(), sum};
  ret = append_locked(rec);
  if (ret < 0) {
    space_->release(offset, data.size());
    return ret;
  }
  ++next_seq_;
  auto old = live_.find(key);
  if (old != live_.end()) free_extent_locked(old->second.offset, old->second.size);
  live_[key] = ObjectInfo{key, offset, data.size(), sum, rec.seq};
  quarantine_.erase(key);
  return 0;
}

int ObjectStore::acquire(ObjectKey key, ObjectInfo* info) {
  std::lock_guard lock(mu_);
  auto it = live_.find(key);
  if (it == live_.end()) {
    auto q = quarantine_.find(key);
    return q != quarantine_.end() ? q->second.error : -ENOENT;
  }
  *info = it->second;
  ++leases_[info->offset].readers;
  return 0;
}

void ObjectStore::release(const ObjectInfo& info) {
  std::lock_guard lock(mu_);
  auto it = leases_.find(info.offset);
  if (it == leases_.end() || --it->second.readers > 0) return;
  const uint64_t freed = it->second.free_size;
  leases_.erase(it);
  if (freed > 0) space_->release(info.offset, freed);
}

void ObjectStore::quarantine(const ObjectInfo& info, int error, std::string reason) {
  std::lock_guard lock(mu_);
  auto it = live_.find(info.key);
  if (it == live_.end() || it->second.seq != info.seq) return;  // replaced meanwhile
  free_extent_locked(info.offset, info.size);
  quarantine_locked(info.key, error, std::move(reason));
}

int64_t ObjectStore::get(ObjectKey key, std::span<std::byte> out) {
  ObjectInfo info;
  int ret = acquire(key, &info);
  if (ret < 0) return ret;
  if (out.size() < info.size) {
    release(info);
    return -EMSGSIZE;
  }
  const uint64_t padded = space_->round_up(info.size);
  AlignedBuffer buf = make_aligned_buffer(padded);
  if (!buf) {
    release(info);
    return -ENOMEM;
  }
  ret = data_io(IoRequest::Op::kRead, buf.get(), padded, info.offset);
  if (ret < 0) {
    quarantine(info, -EIO,
               strprintf("object %#llx: reading extent [%llu, %llu) failed: %s",
                         static_cast<ull>(key), static_cast<ull>(info.offset),
                         static_cast<ull>(info.offset + padded), std::strerror(-ret)));
    release(info);
    return -EIO;
  }
  if (checksum64(buf.get(), info.size) != info.checksum) {
    quarantine(info, -EBADMSG, strprintf("object %#llx: checksum mismatch", static_cast<ull>(key)));
    release(info);
    return -EBADMSG;
  }
  std::memcpy(out.data(), buf.get(), info.size);
  release(info);
  return static_cast<int64_t>(info.size);
}

int ObjectStore::remove(ObjectKey key) {
  if (options_.read_only) return -EROFS;
  std::lock_guard lock(mu_);
  auto it = live_.find(key);
  const bool quarantined = quarantine_.contains(key);
  if (it == live_.end() && !quarantined) return -ENOENT;
  int ret = append_locked(CatalogRecord{RecordType::kDelete, key, next_seq_, 0, 0, 0});
  if (ret < 0) return ret;
  ++next_seq_;
  if (it != live_.end()) {
    free_extent_locked(it->second.offset, it->second.size);
    live_.erase(it);
  }
  quarantine_.erase(key);
  return 0;
}

int ObjectStore::sync() {
  if (options_.read_only) return -EROFS;
  if (fdatasync(data_fd_) != 0) return -errno;
  std::lock_guard lock(mu_);
  return fdatasync(catalog_fd_) == 0 ? 0 : -errno;
}

int ObjectStore::compact() {
  if (options_.read_only) return -EROFS;
  std::lock_guard lock(mu_);
  const std::string tmp = catalog_path_ + ".tmp";
  int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -errno;
  std::vector<ObjectInfo> objs;
  objs.reserve(live_.size());
  for (const auto& [k, info] : live_) objs.push_back(info);
  std::sort(objs.begin(), objs.end(),
            [](const ObjectInfo& a, const ObjectInfo& b) { return a.seq < b.seq; });
  std::vector<uint8_t> bytes(objs.size() * kCatalogRecordSize);
  for (size_t i = 0; i < objs.size(); ++i) {
    const ObjectInfo& o = objs[i];
    encode_record(CatalogRecord{RecordType::kPut, o.key, o.seq, o.offset, o.size, o.checksum},
                  std::span<uint8_t, kCatalogRecordSize>(bytes.data() + i * kCatalogRecordSize,
                                                         kCatalogRecordSize));
  }
  size_t written = 0;
  int ret = write_all(fd, bytes.data(), bytes.size(), 0, &written);
  if (ret == 0 && fdatasync(fd) != 0) ret = -errno;
  if (ret == 0 && fdatasync(data_fd_) != 0) ret = -errno;
  if (ret == 0 && rename(tmp.c_str(), catalog_path_.c_str()) != 0) ret = -errno;
  if (ret < 0) {
    close(fd);
    unlink(tmp.c_str());
    return ret;
  }
  close(catalog_fd_);
  catalog_fd_ = fd;
  catalog_size_ = bytes.size();
  return fsync_dir(options_.dir);
}

std::optional<ObjectInfo> ObjectStore::lookup(ObjectKey key) const {
  std::lock_guard lock(mu_);
  auto it = live_.find(key);
  if (it == live_.end()) return std::nullopt;
  return it->second;
}

std::vector<ObjectInfo> ObjectStore::list() const {
  std::lock_guard lock(mu_);
  std::vector<ObjectInfo> v;
  v.reserve(live_.size());
  for (const auto& [k, info] : live_) v.push_back(info);
  std::sort(v.begin(), v.end(),
            [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  return v;
}

size_t ObjectStore::size() const {
  std::lock_guard lock(mu_);
  return live_.size();
}

std::optional<QuarantinedObject> ObjectStore::quarantined(ObjectKey key) const {
  std::lock_guard lock(mu_);
  auto it = quarantine_.find(key);
  if (it == quarantine_.end()) return std::nullopt;
  return it->second;
}

std::vector<QuarantinedObject> ObjectStore::quarantined() const {
  std::lock_guard lock(mu_);
  std::vector<QuarantinedObject> v;
  for (const auto& [k, q] : quarantine_) v.push_back(q);
  std::sort(v.begin(), v.end(),
            [](const QuarantinedObject& a, const QuarantinedObject& b) { return a.key < b.key; });
  return v;
}

uint64_t ObjectStore::catalog_bytes() const {
  std::lock_guard lock(mu_);
  return catalog_size_;
}

FragmentationStats ObjectStore::space() const {
  std::lock_guard lock(mu_);
  // A growable store reports the file's extent, not the address space it may grow into.
  return growable_ ? space_->stats_below_tail() : space_->stats();
}

void ObjectStore::set_fault_hook(IoFaultHook hook) {
  std::lock_guard io(io_mu_);
  ring_->set_fault_hook(std::move(hook));
}

}  // namespace tempo
