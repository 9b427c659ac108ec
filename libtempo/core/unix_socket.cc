#include "core/unix_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tempo {

int ready_socket_path(const std::string& path, int type, const char* who, sockaddr_un* addr,
                      std::string* why) {
  *addr = sockaddr_un{};
  addr->sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr->sun_path)) {
    *why = "socket path '" + path + "' must be 1 to 107 characters";
    return -EINVAL;
  }
  std::memcpy(addr->sun_path, path.c_str(), path.size() + 1);
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return 0;
  if (!S_ISSOCK(st.st_mode)) {
    *why = "'" + path + "' exists and is not a socket";
    return -EEXIST;
  }
  const int probe = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
  const bool live =
      probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(addr), sizeof(*addr)) == 0;
  if (probe >= 0) close(probe);
  if (live) {
    *why = "'" + path + "' is served by " + who;
    return -EADDRINUSE;
  }
  unlink(path.c_str());
  return 0;
}

}  // namespace tempo
