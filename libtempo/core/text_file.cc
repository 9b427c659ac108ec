#include "core/text_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tempo {

int read_text_file(std::string_view path, std::string_view what, std::string* text,
                   std::string* error) {
  const std::string p(path);
  const auto fail = [&](int e, const std::string& why) {
    if (error) *error = p + ": " + why;
    return -e;
  };
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    return fail(e, std::string("cannot read: ") + std::strerror(e));
  }
  text->assign(kMaxTextFileBytes + 1, '\0');
  size_t got = 0;
  while (got < text->size()) {
    const ssize_t n = ::read(fd, text->data() + got, text->size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {  // a directory is EISDIR here
      const int e = errno;
      ::close(fd);
      text->clear();
      return fail(e, std::string("cannot read: ") + std::strerror(e));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  text->resize(got);
  if (got > kMaxTextFileBytes) {
    text->clear();
    return fail(EFBIG, "larger than 1 MiB: not a " + std::string(what));
  }
  return 0;
}

}  // namespace tempo
