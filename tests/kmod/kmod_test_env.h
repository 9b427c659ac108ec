// Where the kmod tests find tempo.ko's device: TEMPO_KMOD_DEV (default /dev/tempo0) and,
// for data checks, its backing disk TEMPO_KMOD_DISK.
#pragma once

#include <sys/stat.h>

#include <cstdlib>
#include <string>

namespace tempo::testing {

inline std::string kmod_dev_path() {
  const char* p = std::getenv("TEMPO_KMOD_DEV");
  return p && *p ? p : "/dev/tempo0";
}

inline std::string kmod_disk_path() {
  const char* p = std::getenv("TEMPO_KMOD_DISK");
  return p ? p : "";
}

inline bool kmod_present() {
  struct stat st;
  return stat(kmod_dev_path().c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

}  // namespace tempo::testing

// Skips the test with the reason when the module's device node is absent.
#define TEMPO_REQUIRE_KMOD()                                                          \
  do {                                                                                \
    if (!::tempo::testing::kmod_present())                                            \
      GTEST_SKIP() << "no " << ::tempo::testing::kmod_dev_path()                      \
                   << ": tempo.ko is not loaded (make vm-test runs this in a guest)"; \
  } while (0)
