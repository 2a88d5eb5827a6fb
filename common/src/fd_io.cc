#include "carton/common/fd_io.h"

#include <unistd.h>

#include <cerrno>
#include <string>

#include "carton/common/posix_error.h"

namespace carton {

Result<std::size_t> PreadFull(int fd, std::uint64_t offset, MutableByteView out,
                              std::string_view what) {
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n =
        ::pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoIoError(errno, std::string(what) + ": read failed");
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  return done;
}

Status PwriteFull(int fd, std::uint64_t offset, ByteView data, std::string_view what) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n =
        ::pwrite(fd, data.data() + done, data.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoIoError(errno, std::string(what) + ": write failed");
    done += static_cast<std::size_t>(n);
  }
  return Status::Ok();
}

}  // namespace carton
