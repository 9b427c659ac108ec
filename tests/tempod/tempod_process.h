// What the tempod suites share: a directory of its own with the daemon's configuration
// (a 64 MiB DRAM fast tier, an 8 MiB budget, the store and the socket inside it), the
// daemon binary started from it and stopped with SIGTERM, its exit status checked.
#pragma once

#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace tempo::test {

struct TempodFiles {
  std::string dir, socket, store;
};

// (Re)writes f.dir/tempod.conf, with `extra` lines among the top-level keys.
inline void write_tempod_conf(const TempodFiles& f, const std::string& extra) {
  std::ofstream(f.dir + "/tempod.conf")
      << "device = uring\nfast_tier_bytes = 64MiB\nbudget_bytes = 8MiB\npolicy = tempo\n"
      << extra << "daemon.socket = " << f.socket << "\n[uring]\nstore_path = " << f.store
      << "\nhuge_pages = false\nprefault = false\n";
}

// Makes /tmp/<name>-XXXXXX and writes tempod.conf into it; dir is empty on failure.
inline TempodFiles make_tempod_dir(const std::string& name) {
  std::string tmpl = "/tmp/" + name + "-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) return {};
  TempodFiles f{tmpl, tmpl + "/tempod.sock", tmpl + "/store"};
  write_tempod_conf(f, "");
  return f;
}

// Starts tempod (`path`) on dir's configuration; its pid, or -1. It dies with the test.
inline pid_t spawn_tempod(const char* path, const std::string& dir) {
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // a crashed test leaves no daemon behind
    const std::string conf = dir + "/tempod.conf";
    execl(path, "tempod", "--config", conf.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// Stops the daemon at *pid (if any) with SIGTERM: it must exit 0. *pid becomes -1.
inline void stop_tempod(pid_t* pid) {
  if (*pid <= 0) return;
  kill(*pid, SIGTERM);
  int status = 0;
  waitpid(*pid, &status, 0);
  *pid = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "tempod status " << status;
}

}  // namespace tempo::test
