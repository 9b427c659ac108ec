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

#include "stack/context.h"

namespace tempo {

inline constexpr size_t kControlMaxClients = 16;
inline constexpr int kControlRequestMs = 2000;
inline constexpr size_t kControlMaxLine = 65536;
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

  struct Client;

 private:
  ControlServer(Context& instance, std::string path)
      : instance_(instance), path_(std::move(path)) {}
  void serve();
  // Reads or sends what poll reported for one client; false when it is to be dropped.
  bool serve_client(Client& c, short revents);

  Context& instance_;
  std::string path_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;
  std::thread thread_;
};

// The reply line (without its '\n') to one request line: what the socket answers.
std::string control_reply(Context& instance, const std::string& request);

// The JSON documents the socket serves (also what `tempoctl --json` prints).
std::string stats_json(const StackStats& stats);
std::string claims_json(const std::vector<ClaimView>& claims);

}  // namespace tempo
