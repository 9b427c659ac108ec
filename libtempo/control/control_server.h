// The control socket: a running instance serves its counters and claims to `tempoctl stats`
// and `tempoctl claims` over a Unix stream socket (mode 0600), on its own thread.
//
// Protocol (JSON lines): each request is one line, `{"cmd": "stats"}` or
// `{"cmd": "claims", "after": <id>, "limit": <n>}` (the bare words are accepted too); each
// reply is one line, `{"ok": true, "stats": {...}}`, `{"ok": true, "claims": [...], "next":
// <id or null>}` or `{"ok": false, "error": "..."}`. Claims come in pages of at most
// kClaimsPage (the default `limit`) with ids above `after` (default 0), in id order; `next`
// is the `after` of the following page, null on the last. Off unless the configuration
// sets control_socket.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "stack/context.h"

namespace tempo {

// The most claims one `claims` reply carries.
inline constexpr size_t kClaimsPage = 1000;

class ControlServer {
 public:
  // Binds `path` (replacing a stale socket nobody listens on; -EADDRINUSE if one is served,
  // -EEXIST if the path is something else) and starts serving. 0 or -errno with `error`.
  static int start(Context& instance, const std::string& path, std::unique_ptr<ControlServer>* out,
                   std::string* error);
  // Stops the thread, closes the socket and removes its path.
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  const std::string& path() const { return path_; }

 private:
  ControlServer(Context& instance, std::string path)
      : instance_(instance), path_(std::move(path)) {}
  void serve();
  void serve_client(int fd);
  std::string reply(const std::string& request);

  Context& instance_;
  std::string path_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;
  std::thread thread_;
};

// The JSON documents the socket serves (also what `tempoctl --json` prints).
std::string stats_json(const StackStats& stats);
std::string claims_json(const std::vector<ClaimView>& claims);

}  // namespace tempo
