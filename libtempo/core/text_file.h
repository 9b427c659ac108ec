// Small text files read whole (configuration, calibration, model and GPU specs), bounded: a
// path to /dev/zero or to a huge file must not be read until memory runs out.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tempo {

inline constexpr size_t kMaxTextFileBytes = size_t{1} << 20;

// Reads `path` into `text`. 0, or -errno with `error` = "<path>: <problem>": -EISDIR a
// directory, -EFBIG past kMaxTextFileBytes ("larger than 1 MiB: not a <what>"), else the
// open or read error. A FIFO is read like any file (a process substitution is one), so one
// without a writer waits for it, as cat does.
int read_text_file(std::string_view path, std::string_view what, std::string* text,
                   std::string* error);

}  // namespace tempo
