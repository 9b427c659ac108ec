// tempoctl stats and claims: a running instance's control socket, a tempod, or a tempo.ko
// device.
#include <fcntl.h>
#include <linux/tempo.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cli.h"

namespace tempo::ctl {
namespace {

// Sends one request line to the control socket and parses the reply line.
int ask(const std::string& path, const json& request, json* reply, std::string* error) {
  sockaddr_un a{};
  if (path.empty() || path.size() >= sizeof(a.sun_path)) {
    *error = "a control socket path of 1 to 107 characters is needed (--socket)";
    return -EINVAL;
  }
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    const int e = errno;
    if (fd >= 0) close(fd);
    *error =
        "cannot connect to '" + path + "': " + std::strerror(e) +
        (e == ENOENT || e == ECONNREFUSED ? " (is control_socket set and the instance running?)"
                                          : "");
    return -e;
  }
  const std::string line = request.dump() + "\n";
  std::string buf;
  int ret = send(fd, line.data(), line.size(), MSG_NOSIGNAL) == ssize_t(line.size()) ? 0 : -EIO;
  while (ret == 0 && buf.find('\n') == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 5000) <= 0) {
      ret = -ETIMEDOUT;
      break;
    }
    char chunk[65536];
    const ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n <= 0) {
      ret = -EIO;
      break;
    }
    buf.append(chunk, static_cast<size_t>(n));
  }
  close(fd);
  if (ret != 0) {
    *error = "no reply from '" + path + "': " + std::strerror(-ret);
    return ret;
  }
  *reply = json::parse(buf.substr(0, buf.find('\n')), nullptr, false);
  const std::string malformed = "malformed reply from '" + path + "': ";
  if (reply->is_discarded() || !reply->is_object()) {
    *error = malformed + "not a JSON object";
    return -EPROTO;
  }
  const auto ok = reply->find("ok");
  if (ok == reply->end() || !ok->is_boolean()) {
    *error = malformed + "'ok' is not true or false";
    return -EPROTO;
  }
  if (!ok->get<bool>()) {
    const auto why = reply->find("error");
    *error = why != reply->end() && why->is_string() ? why->get<std::string>()
                                                     : malformed + "an error without a message";
    return -EINVAL;
  }
  // The document asked for: "stats" an object, "claims" an array.
  const std::string cmd = request.value("cmd", std::string());
  const auto doc = reply->find(cmd);
  if (doc == reply->end() || (cmd == "stats" ? !doc->is_object() : !doc->is_array())) {
    *error = malformed + "'" + cmd + "' is not " + (cmd == "stats" ? "an object" : "an array");
    return -EPROTO;
  }
  return 0;
}

json kmod_stats(const std::string& path, std::string* error) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  tempo_stats s{};
  if (fd < 0 || ioctl(fd, TEMPO_IOC_STATS, &s) != 0) {
    *error = "'" + path + "': " + std::strerror(errno);
    if (fd >= 0) close(fd);
    return nullptr;
  }
  close(fd);
  return json{{"device", "kmod"},
              {"path", path},
              {"resident_bytes", s.resident_bytes},
              {"filling_bytes", s.filling_bytes},
              {"pinned_bytes", s.pinned_bytes},
              {"pins", s.pins},
              {"stage_batches", s.stage_batches},
              {"stage_errors", s.stage_errors},
              {"staged_bytes", s.staged_bytes},
              {"faults", s.faults},
              {"fault_fills", s.fault_fills},
              {"fault_bytes", s.fault_bytes},
              {"evictions", s.evictions},
              {"evicted_bytes", s.evicted_bytes},
              {"pin_calls", s.pin_calls},
              {"unpin_calls", s.unpin_calls},
              {"resets", s.resets},
              {"inflight_batches", s.inflight_batches}};
}

std::string ms(const json& ns) {
  if (ns.is_null()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", ns.get<double>() / 1e6);
  return buf;
}

}  // namespace

// The claims table (or JSON); a claim of the wrong shape throws json::exception.
int print_claims(const Args& args, const json& reply_claims) {
  json claims = json::array();
  for (const json& c : reply_claims) {
    const std::string st = c.at("state").get<std::string>();
    const bool ended = st == "RELEASED" || st == "CANCELLED" || st == "ORDINARY" || st == "FAILED";
    if (!ended || args.has("all")) claims.push_back(c);
  }
  if (args.has("json")) {
    print_json(claims);
    return 0;
  }
  const bool daemon = args.has("daemon");
  std::printf("%-8s %-13s %12s %12s %12s %12s %9s%s\n", "ID", "STATE", "BYTES", "TTU_MS", "TTR_MS",
              "LAXITY_MS", "DEFERRALS", daemon ? "  ENGINE                  REQUEST" : "");
  for (const json& c : claims) {
    std::printf("%-8llu %-13s %12llu %12s %12s %12s %9u",
                static_cast<unsigned long long>(c.at("id").get<uint64_t>()),
                c.at("state").get<std::string>().c_str(),
                static_cast<unsigned long long>(c.at("bytes").get<uint64_t>()),
                ms(c.at("ttu_ns")).c_str(), ms(c.at("ttr_ns")).c_str(),
                ms(c.at("laxity_ns")).c_str(), c.at("deferrals").get<unsigned>());
    if (daemon)
      std::printf("  %-23s %s", c.at("engine").get<std::string>().c_str(),
                  c.at("request").get<std::string>().c_str());
    std::printf("\n");
  }
  std::printf("%zu claims\n", claims.size());
  return 0;
}

int cmd_stats(const Args& args) {
  json stats;
  std::string error;
  if (int(args.has("device")) + int(args.has("socket")) + int(args.has("daemon")) != 1)
    return fail("stats",
                "give exactly one of --socket=<path>, --daemon=<path> and --device=</dev/tempoN>");
  if (args.has("daemon")) {
    int status = 0;
    stats = daemon_stats(args, &status);
    if (status != 0) return status;
  } else if (args.has("device")) {
    stats = kmod_stats(args.get("device"), &error);
    if (stats.is_null()) return fail("stats", error);
  } else {
    json reply;
    if (ask(args.get("socket"), json{{"cmd", "stats"}}, &reply, &error) != 0)
      return fail("stats", error);
    stats = reply["stats"];
  }
  // A tempod's stats are JSON unless --human, as ndctl's listings.
  if (args.has("json") || (args.has("daemon") && !args.has("human"))) {
    print_json(stats);
    return 0;
  }
  for (auto& [key, value] : stats.items()) {
    std::string v = value.is_string() ? value.get<std::string>() : value.dump();
    if (key.ends_with("_bytes") && value.is_number())
      v += " (" + human_bytes(value.get<double>()) + ")";
    std::printf("%-26s %s\n", key.c_str(), v.c_str());
  }
  return 0;
}

int cmd_claims(const Args& args) {
  json reply;
  std::string error;
  if (args.has("daemon") == args.has("socket"))
    return fail("claims", "give exactly one of --socket=<path> and --daemon=<path>");
  if (args.has("daemon")) return daemon_claims(args);
  const std::string malformed = "malformed reply from '" + args.get("socket") + "': ";
  json claims = json::array();
  // Page by page: each reply is bounded, and `next` is where the following page starts.
  json request{{"cmd", "claims"}};
  while (true) {
    if (ask(args.get("socket"), request, &reply, &error) != 0) return fail("claims", error);
    for (const json& c : reply["claims"]) claims.push_back(c);
    const auto next = reply.find("next");
    if (next == reply.end() || next->is_null()) break;
    // Ids only grow: a server that repeats a page cannot keep tempoctl asking forever.
    if (!next->is_number_unsigned() || next->get<uint64_t>() <= request.value("after", 0ull))
      return fail("claims", malformed + "'next' is not a claim id after the last page's");
    request["after"] = *next;
  }
  try {
    return print_claims(args, claims);
  } catch (const json::exception& e) {
    return fail("claims", malformed + e.what());
  }
}

}  // namespace tempo::ctl
