#include "uring/io_ring.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "../store/test_util.h"

namespace tempo {
namespace {

TEST(IoRing, RunsReadsAndWritesAndResubmitsShortTransfers) {
  if (!test::io_uring_usable()) GTEST_SKIP() << "io_uring is not available to this process";
  test::ScratchDir dir;
  const std::string path = dir.path() + "/f";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  std::unique_ptr<IoRing> ring;
  ASSERT_EQ(IoRing::create(4, &ring), 0);
  EXPECT_EQ(ring->capacity(), 4u);
  std::vector<char> out(64 * 1024), in(64 * 1024);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(i * 7);
  std::vector<IoRequest> writes;
  for (uint32_t i = 0; i < 8; ++i)
    writes.push_back(
        IoRequest{IoRequest::Op::kWrite, fd, out.data() + i * 8192, 8192, i * 8192ull, -1, i});
  ASSERT_EQ(ring->run(writes), 0);
  int calls = 0;
  ring->set_fault_hook([&](const IoRequest& r, int res) {
    ++calls;
    return r.len == 65536 ? 1000 : res;  // the first read comes back short
  });
  const IoRequest read{IoRequest::Op::kRead, fd, in.data(), 65536, 0, -1, 0};
  ASSERT_EQ(ring->run(std::span<const IoRequest>(&read, 1)), 0);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(in, out);
  ring->set_fault_hook([](const IoRequest&, int) { return -EIO; });
  EXPECT_EQ(ring->run(std::span<const IoRequest>(&read, 1)), -EIO);
  ring->set_fault_hook([](const IoRequest&, int) { return 0; });
  EXPECT_EQ(ring->run(std::span<const IoRequest>(&read, 1)), -EIO);
  EXPECT_EQ(ring->in_flight(), 0u);
  close(fd);
  EXPECT_EQ(IoRing::create(0, &ring), -EINVAL);
}

}  // namespace
}  // namespace tempo
