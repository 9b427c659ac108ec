// libFuzzer target: the configuration file parser (config/config_file.h), as
// tempo_config_load() reads a file. Any text is applied whole with no message, or refused
// with a negative errno, a message and the settings unchanged (a calibration_file key makes
// it read that file too: bounded, so even /dev/zero is an error, not a hang).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "config/config_file.h"
#include "config/settings.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  tempo::Settings s;
  const tempo::Settings before = s;
  std::string error;
  const int r = tempo::load_config_text(s, text, "fuzz", &error);
  if (r == 0 && !error.empty()) __builtin_trap();
  if (r > 0 || (r < 0 && error.empty())) __builtin_trap();
  if (r != 0 && s.fast_tier_bytes != before.fast_tier_bytes) __builtin_trap();
  return 0;
}
