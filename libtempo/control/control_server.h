// The control socket: a running instance serves its counters and claims to `tempoctl stats`
// and `tempoctl claims` over a Unix stream socket (mode 0600), on its own thread.
//
// Protocol (JSON lines): each request is one line, `{"cmd": "stats"}` or `{"cmd": "claims"}`
// (the bare words are accepted too); each reply is one line, `{"ok": true, "stats": {...}}`,
// `{"ok": true, "claims": [...]}` or `{"ok": false, "error": "..."}`. Off unless the
// configuration sets control_socket.
//
// Limits (Documentation/robustness.md): at most kControlMaxClients connections at once (more
// wait in the listen backlog); each request, from the connection or the previous reply to its
// own reply sent, has kControlRequestMs; a request line is at most kControlMaxLine bytes; one
// reply is queued per client, and the client's next request is read only once it is sent. A
// client over a limit is disconnected. Sockets are non-blocking: no client holds the others
// or the destructor.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "instance/instance.h"

namespace tempo {

inline constexpr size_t kControlMaxClients = 16;
inline constexpr int kControlRequestMs = 2000;
inline constexpr size_t kControlMaxLine = 65536;

class ControlServer {
 public:
  // Binds `path` (replacing a stale socket nobody listens on; -EADDRINUSE if one is served,
  // -EEXIST if the path is something else) and starts serving. 0 or -errno with `error`.
  static int start(Instance& instance, const std::string& path, std::unique_ptr<ControlServer>* out,
                   std::string* error);
  // Stops the thread, closes the socket and removes its path.
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  const std::string& path() const { return path_; }

  struct Client;

 private:
  ControlServer(Instance& instance, std::string path)
      : instance_(instance), path_(std::move(path)) {}
  void serve();
  // Reads or sends what poll reported for one client; false when it is to be dropped.
  bool serve_client(Client& c, short revents);

  Instance& instance_;
  std::string path_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;
  std::thread thread_;
};

// The reply line (without its '\n') to one request line: what the socket answers.
std::string control_reply(Instance& instance, const std::string& request);

// The JSON documents the socket serves (also what `tempoctl --json` prints).
std::string stats_json(const InstanceStats& stats);
std::string claims_json(const std::vector<ClaimSnapshot>& claims);

}  // namespace tempo
