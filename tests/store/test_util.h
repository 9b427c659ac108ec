// Helpers shared by the store, fast-tier and uring suites: scratch.h's directory and object
// contents, and what the host allows (O_DIRECT, io_uring).
#pragma once

#include <fcntl.h>
#include <liburing.h>
#include <unistd.h>

#include <string>

#include "scratch.h"

namespace tempo::test {

// Whether the file system under `dir` accepts O_DIRECT (tmpfs does not).
inline bool supports_direct_io(const std::string& dir) {
  const std::string probe = dir + "/.direct-probe";
  int fd = ::open(probe.c_str(), O_RDWR | O_CREAT | O_DIRECT, 0600);
  if (fd >= 0) close(fd);
  unlink(probe.c_str());
  return fd >= 0;
}

// Whether this process may use io_uring (containers and sysctls can forbid it).
inline bool io_uring_usable() {
  io_uring ring;
  if (io_uring_queue_init(2, &ring, 0) != 0) return false;
  io_uring_queue_exit(&ring);
  return true;
}

}  // namespace tempo::test
