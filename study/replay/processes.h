// The processes of a daemon run (daemon_engines.h): the run's scratch directory, the tempod
// it starts, the pipes and engine processes it forks. Every failure throws
// std::runtime_error with the reason (and the daemon's log tail where it has one).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "surface/claim_surface.h"

namespace tempo {

// Longest wait for tempod to serve, and for the engine processes to connect.
inline constexpr int kStartupMs = 30000;

std::string errno_text(int e);

// A directory of the run's own (configuration, socket, log, records), removed at the end.
class RunDir {
 public:
  RunDir();
  ~RunDir();
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;
  // The path of `name` inside, removed with the directory.
  std::string file(const std::string& name);

 private:
  std::string path_;
  std::vector<std::string> files_;
};

// Checks that `binary` runs and is a tempod (`--version` answers "tempod ..."), before a
// run writes gigabytes of store for it.
void check_tempod(const std::string& binary);

// The daemon of one run: started on `conf`, stderr to `log`; serving once connect()
// succeeds; stopped with SIGTERM (it must exit 0).
class Tempod {
 public:
  Tempod(const std::string& binary, const std::string& conf, std::string log);
  ~Tempod();
  Tempod(const Tempod&) = delete;
  Tempod& operator=(const Tempod&) = delete;

  // A claim surface on the daemon as `engine`, once it serves `socket`.
  std::unique_ptr<ClaimSurface> connect(const std::string& socket, const std::string& engine);
  void stop();

 private:
  std::string log_;
  pid_t pid_ = -1;
};

void write_all(int fd, const void* data, size_t bytes);
// Reads exactly `bytes`; false at end of file first.
bool read_all(int fd, void* data, size_t bytes);

struct Pipe {
  int r = -1, w = -1;
  Pipe();
  ~Pipe();
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  void close_r();
  void close_w();
};

// The engine processes of a run: killed if the run fails before they end.
class EngineProcesses {
 public:
  ~EngineProcesses();
  void add(pid_t pid) { pids_.push_back(pid); }
  // Waits for every one; the first failure as "engine g: why".
  void wait_all();

 private:
  std::vector<pid_t> pids_;
};

}  // namespace tempo
