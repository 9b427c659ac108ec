// The configuration file and environment overrides, both landing in Settings.
//
// File format: one `key = value` per line; `#` starts a comment (at the start of a line or
// after whitespace); blank lines are ignored; a `[uring]` section prefixes the keys below it
// with "uring." (`[tempo]` or `[]` returns to the top level). Values may be double-quoted.
// Errors read "path:line: <the key's error>".
//
// Environment: TEMPO_<KEY> with the key upper-cased and '.' as '_' (TEMPO_POLICY,
// TEMPO_URING_STORE_PATH) overrides the file. Precedence, lowest first: defaults, the
// calibration file, the configuration file, the environment, tempo_config_set() calls made
// after the load.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "config/settings.h"

namespace tempo {

// Applies the file's keys in order. 0, or -errno (-ENOENT unreadable, -EISDIR a directory,
// -EFBIG over kMaxTextFileBytes (core/text_file.h), -EINVAL a bad line or value) with `error`
// naming file:line, the key and what it accepts. `s` is unchanged on error.
int load_config_file(Settings& s, std::string_view path, std::string* error);
// As load_config_file over `text`; `name` stands for the path in messages.
int load_config_text(Settings& s, std::string_view text, std::string_view name, std::string* error);
// The calibration file `tempoctl calibrate` writes (same format, rate keys only): its values
// replace the defaults of keys not given explicitly. `s` is unchanged on error.
int apply_calibration_file(Settings& s, std::string_view path, std::string* error);
// The keys a calibration file may hold.
inline constexpr std::string_view kCalibrationKeys[] = {"calibration_rate", "static_rate",
                                                        "demand_rate", "staging_rate"};

// TEMPO_<KEY> for `key`.
std::string environment_name(std::string_view key);
// Applies every TEMPO_<KEY> that `lookup` returns a value for (pass ::getenv). Errors read
// "TEMPO_<KEY>: <the key's error>". `s` is unchanged on error.
int apply_environment(Settings& s, const std::function<const char*(const char*)>& lookup,
                      std::string* error);

}  // namespace tempo
