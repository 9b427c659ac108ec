#include "baselines/dax_l1.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tempo {

DaxL1Reader::DaxL1Reader(ObjectStore& store, UringDevice& device, uint64_t granule_bytes)
    : store_(store), device_(device), granule_(granule_bytes) {}

int64_t DaxL1Reader::read_resident(ObjectKey key, uint64_t offset, std::span<std::byte> dst) {
  // A load that hits: the pin keeps the extents in place while they are copied.
  if (const int r = device_.pin(key); r < 0) return r;
  std::vector<std::span<const std::byte>> extents;
  int64_t ret = device_.resident_extents(key, &extents);
  uint64_t skip = offset;
  uint64_t copied = 0;
  for (const auto& x : extents) {
    if (ret < 0 || copied == dst.size()) break;
    if (skip >= x.size()) {
      skip -= x.size();
      continue;
    }
    const uint64_t n = std::min<uint64_t>(x.size() - skip, dst.size() - copied);
    std::memcpy(dst.data() + copied, x.data() + skip, n);
    copied += n;
    skip = 0;
  }
  device_.unpin(key);
  if (ret < 0) return ret;
  ++stats_.hits;
  return static_cast<int64_t>(copied);
}

int DaxL1Reader::fetch_granules(const ObjectInfo& info, Partial& p, uint64_t offset, uint64_t len) {
  const uint64_t padded = p.fetched.size() * granule_;
  for (uint64_t gi = offset / granule_; gi * granule_ < offset + len; ++gi) {
    if (p.fetched[gi]) continue;
    // The granule is read whole, as the device fetches a page before the load completes.
    uint64_t pos = gi * granule_;
    const uint64_t end = std::min(pos + granule_, padded);
    while (pos < end) {
      const ssize_t r = pread(store_.data_fd(), p.bytes.get() + pos, end - pos,
                              static_cast<off_t>(info.offset + pos));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 || (r == 0 && pos < info.size)) {
        ++stats_.read_errors;
        return r < 0 ? -errno : -EIO;
      }
      // Reading past the end of the data file: the padding of the last object.
      if (r == 0) break;
      pos += static_cast<uint64_t>(r);
    }
    p.fetched[gi] = true;
    --p.missing;
    ++stats_.granule_fetches;
    stats_.bytes_fetched += end - gi * granule_;
  }
  return 0;
}

int64_t DaxL1Reader::read(ObjectKey key, uint64_t offset, std::span<std::byte> dst) {
  const int64_t size = device_.object_size(key);
  if (size < 0) return size;
  if (offset > static_cast<uint64_t>(size) || dst.size() > static_cast<uint64_t>(size) - offset)
    return -EINVAL;
  if (dst.empty()) return 0;
  switch (device_.residency(key)) {
    case Residency::kResident:
      return read_resident(key, offset, dst);
    case Residency::kStaging:
      return -EAGAIN;
    case Residency::kAbsent:
      break;
  }
  ObjectInfo info;
  if (const int r = store_.acquire(key, &info); r < 0) return r;
  auto it = partial_.find(key);
  if (it == partial_.end() || it->second.size != info.size) {
    // First touch (or the object was replaced): room for every granule.
    const uint64_t granules = (info.size + granule_ - 1) / granule_;
    AlignedBuffer bytes = make_aligned_buffer(granules * granule_);
    if (!bytes) {
      store_.release(info);
      return -ENOMEM;
    }
    it = partial_
             .insert_or_assign(
                 key, Partial{info.size, std::move(bytes), std::vector<bool>(granules), granules})
             .first;
  }
  Partial& p = it->second;
  int ret = fetch_granules(info, p, offset, dst.size());
  store_.release(info);
  if (ret < 0) return ret;
  std::memcpy(dst.data(), p.bytes.get() + offset, dst.size());
  if (p.missing == 0) {
    ret = device_.admit(key, std::span<const std::byte>(p.bytes.get(), info.size));
    partial_.erase(it);
    if (ret < 0) return ret;
  }
  return static_cast<int64_t>(dst.size());
}

}  // namespace tempo
