// Client ends of a control socket for the tests: a plain one, and hostile ones.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

// A connected socket, or -1.
inline int connect_to(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof(a.sun_path), "%s", path.c_str());
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// What arrives on fd within `ms` milliseconds, up to the first end of line or EOF.
inline std::string read_within(int fd, int ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  std::string out;
  char buf[4096];
  while (out.find('\n') == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// A client that sends `request` lines until its socket takes no more (or 4 MiB of them) and
// never reads a reply: the replies pile up on the server's side. Returns its socket, or -1.
inline int connect_deaf_and_flood(const std::string& path, const std::string& request) {
  const int fd = connect_to(path);
  if (fd < 0 || fcntl(fd, F_SETFL, O_NONBLOCK) != 0) return -1;
  for (size_t sent = 0; sent < (4u << 20);) {
    const ssize_t n = send(fd, request.data(), request.size(), MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  return fd;
}
