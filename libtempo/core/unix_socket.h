// The path a listening AF_UNIX socket binds: what tempod's socket and a context's control
// socket share.
#pragma once

#include <sys/un.h>

#include <string>

namespace tempo {

// Readies `path` for bind(): fills *addr, and removes a socket file that a process now gone
// left there. 0, or -errno with *why: -EINVAL a path of 0 or more than 107 bytes, -EEXIST
// something that is not a socket is there (never removed), -EADDRINUSE a server of `type`
// (SOCK_STREAM, SOCK_SEQPACKET) answers there ("is served by <who>").
int ready_socket_path(const std::string& path, int type, const char* who, sockaddr_un* addr,
                      std::string* why);

}  // namespace tempo
