#include "processes.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <stdexcept>

#include "surface/daemon_surface.h"

namespace tempo {
namespace {

std::string log_tail(const std::string& path) {
  std::ifstream f(path);
  std::deque<std::string> lines;
  for (std::string line; std::getline(f, line);) {
    lines.push_back(line);
    if (lines.size() > 5) lines.pop_front();
  }
  std::string out;
  for (const std::string& l : lines) out += "\n  " + l;
  return out;
}

std::string exit_text(int status) {
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by ") + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

}  // namespace

std::string errno_text(int e) { return std::strerror(e < 0 ? -e : e); }

RunDir::RunDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string t = std::string(tmp && *tmp ? tmp : "/tmp") + "/tempo-replay-daemon-XXXXXX";
  if (mkdtemp(t.data()) == nullptr)
    throw std::runtime_error("cannot make a run directory " + t + ": " + errno_text(errno));
  path_ = t;
}

RunDir::~RunDir() {
  for (const std::string& f : files_) unlink((path_ + "/" + f).c_str());
  rmdir(path_.c_str());
}

std::string RunDir::file(const std::string& name) {
  files_.push_back(name);
  return path_ + "/" + name;
}

void check_tempod(const std::string& binary) {
  const std::string command = "'" + binary + "' --version 2>/dev/null";
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) throw std::runtime_error("cannot run " + binary + ": " + errno_text(errno));
  std::array<char, 64> line{};
  const bool read = std::fgets(line.data(), line.size(), p) != nullptr;
  const int status = pclose(p);
  if (!read || std::strncmp(line.data(), "tempod ", 7) != 0 || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0)
    throw std::runtime_error("tempod did not start: '" + binary +
                             " --version' did not answer as tempod (" + exit_text(status) + ")");
}

Tempod::Tempod(const std::string& binary, const std::string& conf, std::string log)
    : log_(std::move(log)) {
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("cannot fork tempod: " + errno_text(errno));
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // no daemon outlives a crashed replay
    const int fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
    }
    execlp(binary.c_str(), "tempod", "--config", conf.c_str(), static_cast<char*>(nullptr));
    std::fprintf(stderr, "cannot run %s: %s\n", binary.c_str(), std::strerror(errno));
    _exit(127);
  }
}

Tempod::~Tempod() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

std::unique_ptr<ClaimSurface> Tempod::connect(const std::string& socket,
                                              const std::string& engine) {
  std::unique_ptr<ClaimSurface> surface;
  std::string error;
  for (int waited = 0; waited < kStartupMs; waited += 10) {
    if (DaemonSurface::open(socket, engine, &surface, &error) == 0) return surface;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("tempod did not start (" + exit_text(status) +
                               "):" + log_tail(log_));
    }
    usleep(10000);
  }
  throw std::runtime_error("tempod did not serve within " + std::to_string(kStartupMs / 1000) +
                           " s: " + error + log_tail(log_));
}

void Tempod::stop() {
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("tempod stopped with " + exit_text(status) + ":" + log_tail(log_));
}

void write_all(int fd, const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error("write: " + errno_text(errno));
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

bool read_all(int fd, void* data, size_t bytes) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = read(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error("read: " + errno_text(errno));
    if (n == 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

Pipe::Pipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe: " + errno_text(errno));
  r = fds[0];
  w = fds[1];
}

Pipe::~Pipe() {
  close_r();
  close_w();
}

void Pipe::close_r() {
  if (r >= 0) close(r);
  r = -1;
}

void Pipe::close_w() {
  if (w >= 0) close(w);
  w = -1;
}

EngineProcesses::~EngineProcesses() {
  for (const pid_t pid : pids_) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
}

void EngineProcesses::wait_all() {
  std::string failed;
  for (size_t g = 0; g < pids_.size(); ++g) {
    int status = 0;
    waitpid(pids_[g], &status, 0);
    if (failed.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
      failed = "engine " + std::to_string(g) + " failed (" + exit_text(status) + ")";
  }
  pids_.clear();
  if (!failed.empty()) throw std::runtime_error(failed);
}

}  // namespace tempo
