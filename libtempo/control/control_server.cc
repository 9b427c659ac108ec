#include "control/control_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <vector>

#include "client/exposition.h"
#include "client/wire.h"
#include "core/unix_socket.h"

namespace tempo {
namespace {

using nlohmann::json;

json optional_ns(const std::optional<TimeNs>& v) { return v ? json(*v) : json(nullptr); }

json stats_doc(const StackStats& s) {
  tempo_counters c;
  to_counters(s, &c);
  tempod_timeliness t{};
  to_timeliness(s.controller, &t);
  json doc = counters_doc(s.device, c, t);
  doc["held_claims"] = s.held_claims;
  return doc;
}

json claims_doc(const std::vector<ClaimView>& claims) {
  json out = json::array();
  for (const ClaimView& c : claims) {
    out.push_back(json{{"id", c.id},
                       {"state", std::string(claim_state_name(c.state))},
                       {"bytes", c.bytes},
                       {"objects", c.objects},
                       {"ttu_ns", c.ttu},
                       {"ttr_ns", optional_ns(c.ttr)},
                       {"laxity_ns", optional_ns(c.laxity)},
                       {"resident_bytes", c.resident_bytes},
                       {"deferrals", c.deferrals},
                       {"cancel_pending", c.cancel_pending},
                       {"never_fits", c.never_fits},
                       {"request", c.request},
                       {"error", c.error},
                       {"reported_ns", c.timing.reported},
                       {"committed_ns", c.timing.committed},
                       {"ready_ns", c.timing.ready},
                       {"retrieval_requested_ns", c.timing.retrieval_requested},
                       {"transfer_begin_ns", c.timing.transfer_begin},
                       {"ended_ns", c.timing.ended}});
  }
  return out;
}

int fail(std::string* error, const std::string& what) {
  const int e = errno;
  *error = "control_socket: " + what + ": " + std::strerror(e);
  return -e;
}

}  // namespace

std::string stats_json(const StackStats& stats) { return stats_doc(stats).dump(); }
std::string claims_json(const std::vector<ClaimView>& claims) { return claims_doc(claims).dump(); }

int ControlServer::start(Context& instance, const std::string& path,
                         std::unique_ptr<ControlServer>* out, std::string* error) {
  sockaddr_un addr;
  std::string why;
  if (const int r = ready_socket_path(path, SOCK_STREAM, "another process", &addr, &why); r != 0) {
    *error = "control_socket: " + why;
    return r;
  }
  std::unique_ptr<ControlServer> s(new ControlServer(instance, path));
  s->listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s->listen_fd_ < 0) return fail(error, "socket");
  if (bind(s->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
    return fail(error, "bind '" + path + "'");
  // Owner only, set before listen(): no connection is accepted while the mode is wider.
  if (chmod(path.c_str(), 0600) != 0 || listen(s->listen_fd_, 8) != 0) {
    const int r = fail(error, "chmod/listen '" + path + "'");
    unlink(path.c_str());
    return r;
  }
  s->stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s->stop_fd_ < 0) {
    unlink(path.c_str());
    return fail(error, "eventfd");
  }
  ControlServer* raw = s.get();
  s->thread_ = std::thread([raw] { raw->serve(); });
  *out = std::move(s);
  return 0;
}

ControlServer::~ControlServer() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(stop_fd_, &one, sizeof(one));
    thread_.join();
  }
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    unlink(path_.c_str());
  }
  if (stop_fd_ >= 0) close(stop_fd_);
}

// One connection: bytes read but not yet answered, the reply not yet sent, and when the
// request in progress (its bytes and its reply) must be done.
struct ControlServer::Client {
  int fd = -1;
  std::string in;
  std::string out;
  std::chrono::steady_clock::time_point deadline;
};

namespace {

std::chrono::steady_clock::time_point request_deadline() {
  return std::chrono::steady_clock::now() + std::chrono::milliseconds(kControlRequestMs);
}

// Sends what the kernel takes without blocking. false: the client is gone.
bool flush(ControlServer::Client& c) {
  while (!c.out.empty()) {
    const ssize_t w = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    c.out.erase(0, static_cast<size_t>(w));
  }
  c.deadline = request_deadline();
  return true;
}

}  // namespace

void ControlServer::serve() {
  // Non-blocking, all clients in one poll: a client that drips bytes or never reads its
  // replies is dropped at its deadline and never holds the others, nor the stop request.
  std::vector<Client> clients;
  while (true) {
    std::vector<pollfd> fds = {{stop_fd_, POLLIN, 0}};
    fds.push_back({clients.size() < kControlMaxClients ? listen_fd_ : -1, POLLIN, 0});
    auto now = std::chrono::steady_clock::now();
    int timeout_ms = -1;
    for (const Client& c : clients) {
      // A client with a reply queued is not read until the reply is sent: no unbounded queue.
      fds.push_back({c.fd, static_cast<short>(c.out.empty() ? POLLIN : POLLOUT), 0});
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(c.deadline - now).count();
      const int ms = static_cast<int>(std::max<int64_t>(left + 1, 0));
      timeout_ms = timeout_ms < 0 ? ms : std::min(timeout_ms, ms);
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) return;
    if (fds[0].revents) break;
    now = std::chrono::steady_clock::now();
    for (size_t i = 0; i < clients.size(); ++i) {
      Client& c = clients[i];
      const bool alive = now < c.deadline && serve_client(c, fds[i + 2].revents);
      if (!alive) {
        close(c.fd);
        c.fd = -1;
      }
    }
    std::erase_if(clients, [](const Client& c) { return c.fd < 0; });
    if (fds[1].revents & POLLIN) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0) clients.push_back({fd, {}, {}, request_deadline()});
    }
  }
  for (const Client& c : clients) close(c.fd);
}

bool ControlServer::serve_client(Client& c, short revents) {
  if (revents & POLLOUT) {
    if (!flush(c)) return false;
  } else if (revents & (POLLIN | POLLHUP | POLLERR)) {
    char chunk[4096];
    const ssize_t n = read(c.fd, chunk, sizeof(chunk));
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return false;
    if (n > 0) c.in.append(chunk, static_cast<size_t>(n));
  }
  // One request at a time: the next is answered once this reply is sent.
  size_t nl;
  while (c.out.empty() && (nl = c.in.find('\n')) != std::string::npos) {
    c.out = control_reply(instance_, c.in.substr(0, nl)) + "\n";
    c.in.erase(0, nl + 1);
    if (!flush(c)) return false;
  }
  return c.in.size() <= kControlMaxLine;
}

std::string control_reply(Context& instance, const std::string& request) {
  std::string cmd = request;
  while (!cmd.empty() && (cmd.back() == '\r' || cmd.back() == ' ')) cmd.pop_back();
  ClaimId after = 0;
  size_t limit = kClaimsPage;
  if (!cmd.empty() && cmd.front() == '{') {
    const json req = json::parse(cmd, nullptr, false);
    if (req.is_discarded() || !req.is_object() || !req.contains("cmd") || !req["cmd"].is_string())
      return json{{"ok", false}, {"error", "expected {\"cmd\": \"stats\" | \"claims\"}"}}.dump();
    cmd = req["cmd"].get<std::string>();
    if (req.contains("after") && !req["after"].is_number_unsigned())
      return json{{"ok", false}, {"error", "'after' must be a claim id"}}.dump();
    if (req.contains("limit") && (!req["limit"].is_number_unsigned() || req["limit"] == 0 ||
                                  req["limit"].get<uint64_t>() > kClaimsPage))
      return json{{"ok", false}, {"error", "'limit' must be 1.." + std::to_string(kClaimsPage)}}
          .dump();
    after = req.value("after", ClaimId{0});
    limit = req.value("limit", kClaimsPage);
  }
  try {
    if (cmd == "stats")
      return json{{"ok", true},
                  {"stats", stats_doc(instance.call([](Stack& s) { return s.stats(); }))}}
          .dump();
    if (cmd == "claims") {
      // One page per request, taken in one short call on the stack's driver; the JSON is
      // built here, off the event loop.
      const std::vector<ClaimView> page =
          instance.call([&](Stack& s) { return s.list(after, limit); });
      const json next = page.size() == limit ? json(page.back().id) : json(nullptr);
      return json{{"ok", true}, {"claims", claims_doc(page)}, {"next", next}}.dump();
    }
  } catch (const std::exception& e) {
    return json{{"ok", false}, {"error", e.what()}}.dump();
  }
  return json{{"ok", false}, {"error", "unknown command '" + cmd + "': accepted stats, claims"}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace tempo
