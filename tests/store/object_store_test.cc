#include "store/object_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <random>

#include "store/checksum.h"
#include "test_util.h"

namespace tempo {
namespace {

using test::object_bytes;

class ObjectStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::io_uring_usable()) GTEST_SKIP() << "io_uring is not available to this process";
    ASSERT_FALSE(dir_.path().empty());
  }

  ObjectStoreOptions options() const {
    ObjectStoreOptions o;
    o.dir = dir_.path() + "/store";
    return o;
  }
  std::unique_ptr<ObjectStore> open_store(RecoveryReport* report = nullptr,
                                          ObjectStoreOptions o = {}) {
    if (o.dir.empty()) o = options();
    std::unique_ptr<ObjectStore> s;
    EXPECT_EQ(ObjectStore::open(o, &s, report), 0);
    return s;
  }
  std::string catalog() const { return options().dir + "/catalog"; }
  std::string data() const { return options().dir + "/data"; }

  static void expect_object(ObjectStore& s, ObjectKey key, size_t size) {
    std::vector<std::byte> out(size);
    ASSERT_EQ(s.get(key, out), static_cast<int64_t>(size)) << "key " << key;
    EXPECT_EQ(out, object_bytes(key, size)) << "key " << key;
  }

  // A store with objects 1..n of 5000 bytes, closed again.
  void populate(ObjectKey n) {
    auto s = open_store();
    for (ObjectKey k = 1; k <= n; ++k) ASSERT_EQ(s->put(k, object_bytes(k, 5000)), 0);
  }

  static void patch_byte(const std::string& path, uint64_t offset, uint8_t mask) {
    int fd = ::open(path.c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    uint8_t b = 0;
    ASSERT_EQ(pread(fd, &b, 1, static_cast<off_t>(offset)), 1);
    b ^= mask;
    ASSERT_EQ(pwrite(fd, &b, 1, static_cast<off_t>(offset)), 1);
    close(fd);
  }

  test::ScratchDir dir_;
};

TEST_F(ObjectStoreTest, ThousandsOfObjectsReadBackExactlyWithChecksums) {
  auto s = open_store();
  EXPECT_EQ(s->direct_io(), test::supports_direct_io(dir_.path()));
  std::mt19937_64 rng(7);
  std::vector<std::pair<ObjectKey, size_t>> objs;
  for (ObjectKey k = 1; k <= 3000; ++k) {
    const size_t size = 1 + rng() % (96 * 1024);
    objs.emplace_back(k * 0x9e3779b97f4a7c15ULL, size);
    ASSERT_EQ(s->put(objs.back().first, object_bytes(objs.back().first, size)), 0);
  }
  EXPECT_EQ(s->size(), 3000u);
  for (const auto& [key, size] : objs) {
    auto info = s->lookup(key);
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->size, size);
    EXPECT_EQ(info->checksum, checksum64(object_bytes(key, size).data(), size));
    EXPECT_EQ(info->offset % kStoreBlockSize, 0u);
    expect_object(*s, key, size);
  }
}

TEST_F(ObjectStoreTest, RestartRecoversTheCatalogExactly) {
  std::vector<ObjectInfo> before;
  {
    auto s = open_store();
    for (ObjectKey k = 1; k <= 500; ++k) ASSERT_EQ(s->put(k, object_bytes(k, 1000 + k)), 0);
    for (ObjectKey k = 1; k <= 100; ++k) ASSERT_EQ(s->remove(k), 0);
    for (ObjectKey k = 401; k <= 450; ++k) ASSERT_EQ(s->put(k, object_bytes(k + 7, 3 * k)), 0);
    before = s->list();
    ASSERT_EQ(before.size(), 400u);
    ASSERT_EQ(s->sync(), 0);
  }
  RecoveryReport rep;
  auto s = open_store(&rep);
  EXPECT_EQ(rep.records, 650u);
  EXPECT_EQ(rep.live_objects, 400u);
  EXPECT_EQ(rep.torn_tail_bytes, 0u);
  EXPECT_EQ(rep.damaged_records, 0u);
  EXPECT_TRUE(rep.errors.empty());
  EXPECT_EQ(s->list(), before);
  EXPECT_EQ(s->get(1, std::span<std::byte>()), -ENOENT);
  expect_object(*s, 200, 1200);
  std::vector<std::byte> out(3 * 420);
  ASSERT_EQ(s->get(420, out), 3 * 420);
  EXPECT_EQ(out, object_bytes(427, 3 * 420));
  // The sequence continues after the replayed one.
  ASSERT_EQ(s->put(9999, object_bytes(9999, 10)), 0);
  EXPECT_EQ(s->lookup(9999)->seq, 651u);
}

TEST_F(ObjectStoreTest, FreedSpaceIsReused) {
  auto s = open_store();
  ASSERT_EQ(s->put(1, object_bytes(1, 65536)), 0);
  ASSERT_EQ(s->put(2, object_bytes(2, 65536)), 0);
  const uint64_t first = s->lookup(1)->offset;
  ASSERT_EQ(s->remove(1), 0);
  ASSERT_EQ(s->put(3, object_bytes(3, 65536)), 0);
  EXPECT_EQ(s->lookup(3)->offset, first);
  // Replacing a key frees its old extent for the next put.
  const uint64_t second = s->lookup(2)->offset;
  ASSERT_EQ(s->put(2, object_bytes(20, 65536)), 0);
  ASSERT_EQ(s->put(4, object_bytes(4, 65536)), 0);
  EXPECT_EQ(s->lookup(4)->offset, second);
  const FragmentationStats sp = s->space();
  EXPECT_EQ(sp.capacity, 3u * 65536);
  EXPECT_EQ(sp.used_bytes, 3u * 65536);
  EXPECT_EQ(s->remove(77), -ENOENT);
  EXPECT_EQ(s->put(5, std::span<const std::byte>()), -EINVAL);
}

TEST_F(ObjectStoreTest, TornTailIsIgnoredReportedAndCut) {
  {
    auto s = open_store();
    for (ObjectKey k = 1; k <= 10; ++k) ASSERT_EQ(s->put(k, object_bytes(k, 5000)), 0);
  }
  std::filesystem::resize_file(catalog(), 10 * kCatalogRecordSize - 10);
  RecoveryReport rep;
  {
    auto s = open_store(&rep);
    EXPECT_EQ(rep.records, 9u);
    EXPECT_EQ(rep.torn_tail_bytes, kCatalogRecordSize - 10);
    EXPECT_EQ(rep.damaged_records, 0u);
    ASSERT_EQ(rep.errors.size(), 1u);
    EXPECT_NE(rep.errors[0].find("torn catalog tail"), std::string::npos);
    EXPECT_EQ(s->lookup(10), std::nullopt);
    EXPECT_EQ(s->quarantined(10), std::nullopt);
    for (ObjectKey k = 1; k <= 9; ++k) expect_object(*s, k, 5000);
    EXPECT_EQ(s->catalog_bytes(), 9 * kCatalogRecordSize);
    ASSERT_EQ(s->put(11, object_bytes(11, 100)), 0);
  }
  auto s = open_store(&rep);
  EXPECT_EQ(rep.records, 10u);
  EXPECT_TRUE(rep.errors.empty());
  expect_object(*s, 11, 100);
}

TEST_F(ObjectStoreTest, DamagedRecordQuarantinesOnlyItsObject) {
  {
    auto s = open_store();
    for (ObjectKey k = 1; k <= 10; ++k) ASSERT_EQ(s->put(k, object_bytes(k, 5000)), 0);
  }
  patch_byte(catalog(), 4 * kCatalogRecordSize + 26, 0x40);  // record of key 5, offset field
  RecoveryReport rep;
  auto s = open_store(&rep);
  EXPECT_EQ(rep.records, 9u);
  EXPECT_EQ(rep.damaged_records, 1u);
  EXPECT_EQ(rep.torn_tail_bytes, 0u);
  ASSERT_EQ(rep.errors.size(), 1u);
  EXPECT_NE(rep.errors[0].find("catalog record 4"), std::string::npos);
  std::vector<std::byte> out(5000);
  EXPECT_EQ(s->get(5, out), -EBADMSG);
  ASSERT_TRUE(s->quarantined(5).has_value());
  EXPECT_EQ(s->quarantined(5)->error, -EBADMSG);
  EXPECT_EQ(s->quarantined().size(), 1u);
  for (ObjectKey k = 1; k <= 10; ++k)
    if (k != 5) expect_object(*s, k, 5000);
  // A new put of the key clears its quarantine.
  ASSERT_EQ(s->put(5, object_bytes(5, 5000)), 0);
  expect_object(*s, 5, 5000);
  EXPECT_TRUE(s->quarantined().empty());
}

TEST_F(ObjectStoreTest, RecordDamagedInItsKeyIsReportedAndSkipped) {
  {
    auto s = open_store();
    for (ObjectKey k = 1; k <= 10; ++k) ASSERT_EQ(s->put(k, object_bytes(k, 5000)), 0);
  }
  patch_byte(catalog(), 2 * kCatalogRecordSize + 8, 0x01);  // the key of key 3's record
  RecoveryReport rep;
  auto s = open_store(&rep);
  EXPECT_EQ(rep.records, 9u);
  EXPECT_EQ(rep.damaged_records, 1u);
  ASSERT_EQ(rep.errors.size(), 1u);
  EXPECT_NE(rep.errors[0].find("beyond naming"), std::string::npos);
  std::vector<std::byte> out(5000);
  EXPECT_EQ(s->get(3, out), -ENOENT);
  for (ObjectKey k = 1; k <= 10; ++k)
    if (k != 3) expect_object(*s, k, 5000);
}

TEST_F(ObjectStoreTest, DamagedDeleteRecordCannotResurrectReusedSpace) {
  {
    auto s = open_store();
    ASSERT_EQ(s->put(1, object_bytes(1, 4096)), 0);  // record 0
    ASSERT_EQ(s->remove(1), 0);                      // record 1
    ASSERT_EQ(s->put(2, object_bytes(2, 4096)), 0);  // record 2, reuses key 1's extent
    ASSERT_EQ(s->lookup(2)->offset, 0u);
  }
  patch_byte(catalog(), kCatalogRecordSize + 8, 0x01);  // delete record, unattributable
  RecoveryReport rep;
  auto s = open_store(&rep);
  EXPECT_EQ(rep.damaged_records, 1u);
  ASSERT_EQ(rep.errors.size(), 2u);
  EXPECT_NE(rep.errors[1].find("overlaps a newer object"), std::string::npos);
  expect_object(*s, 2, 4096);
  std::vector<std::byte> out(4096);
  EXPECT_EQ(s->get(1, out), -EBADMSG);
}

TEST_F(ObjectStoreTest, DataFileShorterThanTheCatalogQuarantinesTheObjectsPastItsEnd) {
  {
    auto s = open_store();
    for (ObjectKey k = 0; k < 10; ++k) ASSERT_EQ(s->put(k, object_bytes(k, 65536)), 0);
    for (ObjectKey k = 0; k < 10; ++k) ASSERT_EQ(s->lookup(k)->offset, k * 65536);
  }
  std::filesystem::resize_file(data(), 5 * 65536 + 100);
  RecoveryReport rep;
  auto s = open_store(&rep);
  EXPECT_EQ(rep.live_objects, 5u);
  EXPECT_EQ(rep.errors.size(), 5u);
  for (ObjectKey k = 0; k < 5; ++k) expect_object(*s, k, 65536);
  std::vector<std::byte> out(65536);
  for (ObjectKey k = 5; k < 10; ++k) {
    EXPECT_EQ(s->get(k, out), -EIO);
    ASSERT_TRUE(s->quarantined(k).has_value());
    EXPECT_NE(s->quarantined(k)->reason.find("shorter than the catalog"), std::string::npos);
  }
}

TEST_F(ObjectStoreTest, ChecksumMismatchIsAnErrorAndQuarantinesTheObject) {
  auto s = open_store();
  for (ObjectKey k = 0; k < 8; ++k) ASSERT_EQ(s->put(k, object_bytes(k, 10000)), 0);
  patch_byte(data(), s->lookup(3)->offset + 777, 0x80);
  std::vector<std::byte> out(10000);
  EXPECT_EQ(s->get(3, out), -EBADMSG);
  ASSERT_TRUE(s->quarantined(3).has_value());
  EXPECT_NE(s->quarantined(3)->reason.find("checksum mismatch"), std::string::npos);
  EXPECT_EQ(s->get(3, out), -EBADMSG);
  for (ObjectKey k = 0; k < 8; ++k)
    if (k != 3) expect_object(*s, k, 10000);
  EXPECT_EQ(s->remove(3), 0);
  EXPECT_EQ(s->get(3, out), -ENOENT);
  EXPECT_EQ(s->get(4, std::span<std::byte>(out.data(), 10)), -EMSGSIZE);
}

TEST_F(ObjectStoreTest, InjectedStoreReadErrorsAreReported) {
  auto s = open_store();
  ASSERT_EQ(s->put(1, object_bytes(1, 8192)), 0);
  ASSERT_EQ(s->put(2, object_bytes(2, 8192)), 0);
  // Short reads are completed by resubmitting the rest: the object still reads back.
  s->set_fault_hook([](const IoRequest& r, int res) {
    return r.op == IoRequest::Op::kRead && res == static_cast<int>(r.len) && r.len > 4096 ? 4096
                                                                                          : res;
  });
  expect_object(*s, 1, 8192);
  s->set_fault_hook(
      [](const IoRequest& r, int res) { return r.op == IoRequest::Op::kRead ? -EIO : res; });
  std::vector<std::byte> out(8192);
  EXPECT_EQ(s->get(2, out), -EIO);
  s->set_fault_hook({});
  EXPECT_EQ(s->quarantined(2)->error, -EIO);
  expect_object(*s, 1, 8192);
}

// Disk full: RLIMIT_FSIZE makes writes past the limit fail with EFBIG, as a full disk would
// with ENOSPC, without needing a loop device.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = signal(SIGXFSZ, SIG_IGN);
    rlimit lim = old_;
    lim.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &lim);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit old_{};
  sighandler_t old_handler_;
};

TEST_F(ObjectStoreTest, DiskFullOnDataWriteLeavesTheCatalogConsistent) {
  auto s = open_store();
  for (ObjectKey k = 0; k < 4; ++k) ASSERT_EQ(s->put(k, object_bytes(k, 65536)), 0);
  const auto before = s->list();
  const uint64_t cat = s->catalog_bytes();
  {
    FileSizeLimit limit(5 * 65536);
    EXPECT_EQ(s->put(10, object_bytes(10, 4 * 65536)), -EFBIG);
  }
  EXPECT_EQ(s->list(), before);
  EXPECT_EQ(s->catalog_bytes(), cat);
  EXPECT_EQ(std::filesystem::file_size(catalog()), cat);
  EXPECT_EQ(s->space().used_bytes, 4u * 65536);
  ASSERT_EQ(s->put(10, object_bytes(10, 65536)), 0);
  EXPECT_EQ(s->lookup(10)->offset, 4u * 65536);  // the failed put's extent was returned
  s.reset();
  RecoveryReport rep;
  s = open_store(&rep);
  EXPECT_TRUE(rep.errors.empty());
  EXPECT_EQ(s->size(), 5u);
  expect_object(*s, 10, 65536);
}

TEST_F(ObjectStoreTest, DiskFullOnCatalogAppendCutsThePartialRecord) {
  auto s = open_store();
  // Grow the catalog past the data file so the limit falls inside the next record.
  for (int i = 0; i < 200; ++i) ASSERT_EQ(s->put(1, object_bytes(1, 4096)), 0);
  const auto before = s->list();
  const uint64_t cat = s->catalog_bytes();
  ASSERT_EQ(cat, 200 * kCatalogRecordSize);
  {
    FileSizeLimit limit(cat + 30);
    EXPECT_EQ(s->put(2, object_bytes(2, 4096)), -EFBIG);
  }
  EXPECT_EQ(s->list(), before);
  EXPECT_EQ(std::filesystem::file_size(catalog()), cat);
  s.reset();
  RecoveryReport rep;
  s = open_store(&rep);
  EXPECT_EQ(rep.torn_tail_bytes, 0u);
  EXPECT_TRUE(rep.errors.empty());
  EXPECT_EQ(s->list(), before);
}

TEST_F(ObjectStoreTest, FixedSizeStoreRefusesPutsThatDoNotFit) {
  ObjectStoreOptions o = options();
  o.capacity_bytes = 4 * 65536;
  o.sync = true;
  auto s = open_store(nullptr, o);
  EXPECT_EQ(std::filesystem::file_size(data()), 4u * 65536);
  for (ObjectKey k = 0; k < 4; ++k) ASSERT_EQ(s->put(k, object_bytes(k, 65536)), 0);
  const uint64_t cat = s->catalog_bytes();
  EXPECT_EQ(s->put(9, object_bytes(9, 1)), -ENOSPC);
  EXPECT_EQ(s->catalog_bytes(), cat);
  EXPECT_EQ(s->space().free_bytes, 0u);
  ASSERT_EQ(s->remove(2), 0);
  ASSERT_EQ(s->put(9, object_bytes(9, 65536)), 0);
  EXPECT_EQ(s->lookup(9)->offset, 2u * 65536);
  expect_object(*s, 9, 65536);
}

TEST_F(ObjectStoreTest, CompactionKeepsExactlyTheLiveObjects) {
  auto s = open_store();
  for (int round = 0; round < 5; ++round)
    for (ObjectKey k = 0; k < 50; ++k) ASSERT_EQ(s->put(k, object_bytes(k + round, 3000)), 0);
  for (ObjectKey k = 0; k < 10; ++k) ASSERT_EQ(s->remove(k), 0);
  const auto before = s->list();
  ASSERT_EQ(s->compact(), 0);
  EXPECT_EQ(s->catalog_bytes(), 40 * kCatalogRecordSize);
  EXPECT_EQ(s->list(), before);
  s.reset();
  RecoveryReport rep;
  s = open_store(&rep);
  EXPECT_EQ(rep.records, 40u);
  EXPECT_EQ(s->list(), before);
  std::vector<std::byte> out(3000);
  ASSERT_EQ(s->get(20, out), 3000);
  EXPECT_EQ(out, object_bytes(24, 3000));
}

TEST_F(ObjectStoreTest, BadOptionsAreRejected) {
  std::unique_ptr<ObjectStore> s;
  EXPECT_EQ(ObjectStore::open(ObjectStoreOptions{}, &s), -EINVAL);
  ObjectStoreOptions o = options();
  o.request_bytes = 1000;
  EXPECT_EQ(ObjectStore::open(o, &s), -EINVAL);
  o = options();
  o.dir = "/proc/no/such/dir";
  EXPECT_LT(ObjectStore::open(o, &s), 0);
}

// Hostile and damaged stores (issue 15) -------------------------------------------------

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::vector<uint8_t> v(std::filesystem::file_size(path));
  int fd = ::open(path.c_str(), O_RDONLY);
  EXPECT_EQ(pread(fd, v.data(), v.size(), 0), static_cast<ssize_t>(v.size()));
  close(fd);
  return v;
}

// A bit flip in the last, synced record is damage: reported and its object quarantined, the
// record kept. It used to be taken for a torn tail: the object vanished and the record was
// cut off for good.
TEST_F(ObjectStoreTest, BitFlipInTheLastRecordIsDamageNotATornTail) {
  populate(10);
  patch_byte(catalog(), 9 * kCatalogRecordSize + 26, 0x40);  // key 10's offset field
  RecoveryReport rep;
  {
    auto s = open_store(&rep);
    EXPECT_EQ((std::array{rep.records, rep.damaged_records, rep.torn_tail_bytes}),
              (std::array<uint64_t, 3>{9, 1, 0}));
    EXPECT_EQ(rep.errors, std::vector<std::string>{"catalog record 9 (byte 576) is damaged or out "
                                                   "of range (seq 10); it belonged to object 0xa"});
    ASSERT_TRUE(s->quarantined(10).has_value());
    EXPECT_EQ(s->quarantined(10)->error, -EBADMSG);
    EXPECT_EQ(s->catalog_bytes(), 10 * kCatalogRecordSize);
    ASSERT_EQ(s->put(11, object_bytes(11, 100)), 0);
  }
  EXPECT_EQ(std::filesystem::file_size(catalog()), 11 * kCatalogRecordSize);
  auto s = open_store(&rep);
  EXPECT_EQ(rep.records, 10u);
  EXPECT_EQ(rep.damaged_records, 1u);  // still there, still said
  expect_object(*s, 11, 100);
  EXPECT_EQ(s->lookup(11)->seq, 10u);  // after the last valid record: a damaged one's is untrusted
}

// A whole record of zeros at the end (the file grew, the data never landed) is a torn tail.
TEST_F(ObjectStoreTest, ZeroRecordsAtTheEndAreATornTail) {
  populate(3);
  std::filesystem::resize_file(catalog(), 5 * kCatalogRecordSize + 7);
  RecoveryReport rep;
  auto s = open_store(&rep);
  EXPECT_EQ(rep.records, 3u);
  EXPECT_EQ(rep.damaged_records, 0u);
  EXPECT_EQ(rep.torn_tail_bytes, 2 * kCatalogRecordSize + 7);
  EXPECT_EQ(std::filesystem::file_size(catalog()), 3 * kCatalogRecordSize);
}

// Read-only: everything readable, nothing written: a torn tail stays, puts are refused.
TEST_F(ObjectStoreTest, ReadOnlyOpenInspectsAndChangesNothing) {
  populate(4);
  std::filesystem::resize_file(catalog(), 4 * kCatalogRecordSize - 20);
  const std::vector<uint8_t> cat = file_bytes(catalog());
  const std::vector<uint8_t> dat = file_bytes(data());
  ObjectStoreOptions o = options();
  o.read_only = true;
  RecoveryReport rep;
  std::unique_ptr<ObjectStore> s;
  ASSERT_EQ(ObjectStore::open(o, &s, &rep), 0);
  EXPECT_EQ(rep.torn_tail_bytes, kCatalogRecordSize - 20);
  EXPECT_EQ(s->size(), 3u);
  for (ObjectKey k = 1; k <= 3; ++k) expect_object(*s, k, 5000);
  EXPECT_EQ(s->put(9, object_bytes(9, 10)), -EROFS);
  EXPECT_EQ(s->remove(1), -EROFS);
  EXPECT_EQ(s->compact(), -EROFS);
  EXPECT_EQ(s->sync(), -EROFS);
  s.reset();
  EXPECT_EQ(file_bytes(catalog()), cat);
  EXPECT_EQ(file_bytes(data()), dat);
  o.dir = dir_.path() + "/absent";
  EXPECT_EQ(ObjectStore::open(o, &s), -ENOENT);
  EXPECT_FALSE(std::filesystem::exists(o.dir));
}

// A store whose files the user may only read (here: a child as nobody when run as root).
TEST_F(ObjectStoreTest, AReadOnlyStoreCanBeInspected) {
  populate(3);
  namespace fs = std::filesystem;
  fs::permissions(dir_.path(),
                  fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(catalog(),
                  fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(data(), fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::permissions(options().dir, fs::perms::owner_read | fs::perms::owner_exec |
                                     fs::perms::others_read | fs::perms::others_exec);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // From the scratch directory by a relative path: the checkout's ancestors need not be
    // open to the unprivileged user (a clone in a 0700 mktemp directory).
    if (chdir(dir_.path().c_str()) != 0) _exit(9);
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(10);
    ObjectStoreOptions o = options();
    o.dir = "store";
    std::unique_ptr<ObjectStore> s;
    if (ObjectStore::open(o, &s) != -EACCES) _exit(11);  // writing is not allowed...
    o.read_only = true;
    if (ObjectStore::open(o, &s) != 0) _exit(12);  // ... reading is
    std::vector<std::byte> out(5000);
    if (s->size() != 3 || s->get(2, out) != 5000 || out != object_bytes(2, 5000)) _exit(13);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  fs::permissions(options().dir, fs::perms::owner_all);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// A deleted catalog beside a data file with objects: refused with a clear error, nothing
// created (it used to open as an empty store whose puts overwrote the objects).
TEST_F(ObjectStoreTest, AMissingCatalogBesideDataRefusesToOpen) {
  populate(3);
  std::filesystem::remove(catalog());
  const std::vector<uint8_t> dat = file_bytes(data());
  RecoveryReport rep;
  std::unique_ptr<ObjectStore> s;
  EXPECT_EQ(ObjectStore::open(options(), &s, &rep), -EUCLEAN);
  ASSERT_EQ(rep.errors.size(), 1u);
  EXPECT_EQ(rep.errors[0], "the catalog '" + catalog() + "' is missing beside the data file '" +
                               data() + "' (" + std::to_string(dat.size()) +
                               " bytes): refusing to open an empty store over its objects; "
                               "restore the catalog, or remove the data file");
  EXPECT_FALSE(std::filesystem::exists(catalog()));
  EXPECT_EQ(file_bytes(data()), dat);
  // A new fixed-size store (its data file preallocated, its catalog empty) reopens.
  ObjectStoreOptions fixed = options();
  fixed.dir = dir_.path() + "/fixed";
  fixed.capacity_bytes = 1 << 20;
  ASSERT_EQ(ObjectStore::open(fixed, &s), 0);
  s.reset();
  EXPECT_EQ(ObjectStore::open(fixed, &s), 0);
}

// A crafted record with sequence 2^64-1: its object quarantined, later puts keep counting
// from the valid records (no wrap to 0); sequences run out at kCatalogSeqLimit, refused.
TEST_F(ObjectStoreTest, CraftedSequencesCannotWrapTheNextPut) {
  populate(3);
  const auto append = [&](const CatalogRecord& r) {
    std::array<uint8_t, kCatalogRecordSize> buf{};
    encode_record(r, buf);
    int fd = ::open(catalog().c_str(), O_WRONLY | O_APPEND);
    ASSERT_EQ(write(fd, buf.data(), buf.size()), static_cast<ssize_t>(buf.size()));
    close(fd);
  };
  append({RecordType::kPut, 77, UINT64_MAX, 0, 5000, 0});
  RecoveryReport rep;
  {
    auto s = open_store(&rep);
    EXPECT_EQ(rep.damaged_records, 1u);
    ASSERT_TRUE(s->quarantined(77).has_value());
    ASSERT_EQ(s->put(4, object_bytes(4, 100)), 0);
    EXPECT_EQ(s->lookup(4)->seq, 4u);
  }
  append({RecordType::kDelete, 3, kCatalogSeqLimit - 1, 0, 0, 0});
  auto s = open_store(&rep);
  EXPECT_EQ(s->lookup(3), std::nullopt);
  EXPECT_EQ(s->put(5, object_bytes(5, 100)), -EOVERFLOW);
  EXPECT_EQ(s->remove(1), -EOVERFLOW);
  EXPECT_EQ(s->lookup(5), std::nullopt);
  expect_object(*s, 1, 5000);
}

// A catalog or data path that is not a store file: refused, named, left as it was. A FIFO
// catalog used to block a read-only open forever (tempoctl store ls hung), and /dev/zero
// as the catalog or /dev/null as the data opened as an empty store whose puts vanished.
TEST_F(ObjectStoreTest, NonFilesAsCatalogOrDataAreRefused) {
  const std::string dir = options().dir;
  const auto refused = [&](const std::string& path, const std::string& kind, bool ro) {
    ObjectStoreOptions o = options();
    o.read_only = ro;
    RecoveryReport rep;
    std::unique_ptr<ObjectStore> s;
    EXPECT_EQ(ObjectStore::open(o, &s, &rep), -EINVAL) << path << (ro ? " read-only" : "");
    ASSERT_EQ(rep.errors.size(), 1u) << path;
    EXPECT_EQ(rep.errors[0], "'" + path + "' is " + kind + ", not a regular file" +
                                 (path == data() ? " or a block device" : ""));
  };
  const auto each_kind = [&](const std::string& path) {
    std::filesystem::remove(path);
    for (bool ro : {true, false}) {
      ASSERT_EQ(mkfifo(path.c_str(), 0644), 0);
      refused(path, "a FIFO", ro);
      std::filesystem::remove(path);
      std::filesystem::create_symlink(path == data() ? "/dev/null" : "/dev/zero", path);
      refused(path, "a character device", ro);
      std::filesystem::remove(path);
      std::filesystem::create_directory(path);
      refused(path, "a directory", ro);
      std::filesystem::remove(path);
    }
  };
  populate(1);
  each_kind(catalog());
  std::filesystem::remove(data());
  ASSERT_EQ(::close(::open(catalog().c_str(), O_CREAT | O_WRONLY, 0644)), 0);
  each_kind(data());
  EXPECT_EQ(std::filesystem::file_size(catalog()), 0u);
  EXPECT_TRUE(std::filesystem::is_directory(dir));
}

}  // namespace
}  // namespace tempo
