// tempod: one TempoKV stack per device, shared by many engine processes (Documentation/tempod.md).
//
//   tempod --config /etc/tempo/tempod.conf [--socket PATH] [--check-config]
//
// Serves the stack the configuration describes (device = uring or kmod) on daemon.socket until
// SIGTERM or SIGINT; tells systemd it is ready (READY=1 on $NOTIFY_SOCKET) once it serves.
// --check-config only reads and checks the configuration (a package's or an operator's test
// before a restart): nothing is opened, allocated or served.
// Exit codes: 0 stopped by a signal (or a valid configuration), 2 bad usage or configuration,
// 1 could not start.
#include <grp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "config/config_file.h"
#include "control/control_server.h"
#include "options.h"
#include "server.h"
#include "stack/context.h"

namespace {

// TEMPO_LOG=debug|info|warn|err (default info), as libndctl's NDCTL_LOG.
int log_level() {
  const char* v = std::getenv("TEMPO_LOG");
  if (!v) return 6;
  const std::string s = v;
  return s == "debug" ? 7 : s == "warn" ? 4 : s == "err" ? 3 : 6;
}

void log_line(int priority, const std::string& msg) {
  if (priority <= log_level()) std::fprintf(stderr, "<%d>tempod: %s\n", priority, msg.c_str());
}

// sd_notify(READY=1) without libsystemd: one datagram to $NOTIFY_SOCKET.
void notify_ready() {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (!path || !*path) return;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const size_t n = std::strlen(path);
  if (n >= sizeof(addr.sun_path)) return;
  std::memcpy(addr.sun_path, path, n);
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  const std::string msg = "READY=1\nMAINPID=" + std::to_string(getpid());
  sendto(fd, msg.data(), msg.size(), 0, reinterpret_cast<sockaddr*>(&addr),
         static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + n));
  close(fd);
}

const tempo::cli::Option kOptions[] = {
    {"config", 'c', "file",
     "the configuration file (device uring or kmod, store, daemon.* keys); required"},
    {"socket", 's', "path", "the socket to serve (overrides daemon.socket)"},
    {"check-config", 0, nullptr,
     "check the configuration and exit (0 valid, 2 not); opens no store, device or socket"},
};

const tempo::cli::Tool kTool{
    "tempod", "tempod --config=<file> [--socket=<path>] [--check-config]",
    "Serves one device's TempoKV stack to libtempo.so clients (device = daemon) until\n"
    "SIGTERM or SIGINT. Exit status: 0 stopped by a signal, 2 bad usage or configuration,\n"
    "1 could not start.",
    kOptions};

int usage(const std::string& why) { return tempo::cli::usage_error("tempod", why); }

// The daemon.* keys of the configuration. 0, or -EINVAL with `error`.
int server_options(const tempo::Settings& s, tempo::ServerOptions* o, std::string* error) {
  o->socket = s.daemon.socket;
  o->mode = static_cast<mode_t>(s.daemon.socket_mode);
  o->max_queued = s.daemon.max_queued;
  o->max_put_bytes = s.daemon.max_put_bytes;
  o->metrics_addr = s.daemon.metrics_addr;
  o->metrics_port = s.daemon.metrics_port;
  o->shares = s.daemon.shares;
  o->default_share = s.daemon.default_share;
  o->max_connections = s.daemon.max_connections;
  o->hello_timeout = s.daemon.hello_timeout;
  if (!s.daemon.socket_group.empty()) {
    const group* g = getgrnam(s.daemon.socket_group.c_str());
    if (!g) {
      *error = "daemon.socket_group '" + s.daemon.socket_group + "': no such group";
      return -EINVAL;
    }
    o->group = g->gr_gid;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tempo::cli::Args args;
  if (const auto exit = tempo::cli::parse_or_exit(kTool, argc - 1, argv + 1, &args)) return *exit;
  const std::string config = args.get("config");
  const std::string socket = args.get("socket");
  if (config.empty()) return usage("--config is required");
  if (args.has("socket") && socket.empty())
    return usage("--socket needs a path (an empty one would serve daemon.socket unasked)");

  tempo::Settings settings;
  std::string error;
  if (tempo::load_config_file(settings, config, &error) != 0 ||
      tempo::apply_environment(settings, ::getenv, &error) != 0)
    return usage(error);
  if (!socket.empty() && settings.set("daemon.socket", socket, &error) != 0) return usage(error);
  tempo::ServerOptions options;
  if (server_options(settings, &options, &error) != 0) return usage(error);
  options.log = log_line;
  if (settings.device != "uring" && settings.device != "kmod")
    return usage("tempod serves device = uring or kmod");
  settings.uring.share_fast_tier = true;
  if (args.has("check-config")) {
    if (settings.validate(&error) != 0) return usage(error);
    std::printf("tempod: %s: valid (device %s, socket %s)\n", config.c_str(),
                settings.device.c_str(), options.socket.c_str());
    return 0;
  }

  // Signals are taken synchronously below; threads started from here on inherit the mask.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<tempo::Context> ctx;
  if (const int r = tempo::Context::create(settings, &ctx, &error, tempo::DriverKind::kThreaded);
      r != 0) {
    log_line(3, error);
    return 1;
  }
  std::unique_ptr<tempo::Server> server;
  if (const int r = tempo::Server::start(*ctx, options, &server, &error); r != 0) {
    log_line(3, error);
    return 1;
  }
  std::unique_ptr<tempo::ControlServer> control;
  if (!settings.control_socket.empty() &&
      tempo::ControlServer::start(*ctx, settings.control_socket, &control, &error) != 0) {
    log_line(3, error);
    return 1;
  }
  log_line(6, "serving " +
                  (settings.device == "kmod" ? settings.kmod.path : settings.uring.store_path) +
                  " on " + options.socket);
  notify_ready();
  int sig = 0;
  sigwait(&stop, &sig);
  log_line(6, std::string("stopping on ") + strsignal(sig));
  control.reset();
  server.reset();
  return 0;
}
