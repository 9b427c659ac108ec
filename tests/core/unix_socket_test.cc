#include "core/unix_socket.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "../store/scratch.h"

namespace tempo {
namespace {

// A bound SEQPACKET socket at `path`, listening or not (a crashed server's leftover).
int bound(const std::string& path, bool listening) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  path.copy(a.sun_path, sizeof(a.sun_path) - 1);
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  if (listening) {
    EXPECT_EQ(listen(fd, 1), 0);
  }
  return fd;
}

TEST(ReadySocketPath, LeavesWhatIsNotAStaleSocket) {
  test::ScratchDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string path = dir.path() + "/s.sock";
  sockaddr_un addr;
  std::string why;
  EXPECT_EQ(ready_socket_path(path, SOCK_SEQPACKET, "another tempod", &addr, &why), 0);
  EXPECT_STREQ(addr.sun_path, path.c_str());
  EXPECT_EQ(ready_socket_path(std::string(108, 'x'), SOCK_STREAM, "x", &addr, &why), -EINVAL);
  EXPECT_EQ(why, "socket path '" + std::string(108, 'x') + "' must be 1 to 107 characters");
  EXPECT_EQ(ready_socket_path("", SOCK_STREAM, "x", &addr, &why), -EINVAL);

  std::ofstream(path) << "data";
  EXPECT_EQ(ready_socket_path(path, SOCK_SEQPACKET, "another tempod", &addr, &why), -EEXIST);
  EXPECT_EQ(why, "'" + path + "' exists and is not a socket");
  EXPECT_EQ(std::filesystem::file_size(path), 4u);
  std::filesystem::remove(path);

  const int live = bound(path, true);
  EXPECT_EQ(ready_socket_path(path, SOCK_SEQPACKET, "another tempod", &addr, &why), -EADDRINUSE);
  EXPECT_EQ(why, "'" + path + "' is served by another tempod");
  EXPECT_TRUE(std::filesystem::exists(path));
  close(live);
  std::filesystem::remove(path);

  const int stale = bound(path, false);
  close(stale);
  EXPECT_EQ(ready_socket_path(path, SOCK_SEQPACKET, "another tempod", &addr, &why), 0);
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace tempo
