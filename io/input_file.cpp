#include "input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "comm/errors.hpp"

namespace spotrun::io {
namespace {

// Opens a regular file for reading without blocking (O_NONBLOCK: a FIFO is not waited on); returns the
// descriptor and its size, or throws std::runtime_error with the reason.
int open_regular(const std::string& path, std::uint64_t& size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) throw std::runtime_error("does not exist");
    throw std::runtime_error(std::string("cannot be opened: ") + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const bool dir = S_ISDIR(st.st_mode);
    ::close(fd);
    throw std::runtime_error(dir ? "is a directory" : "is not a regular file (a FIFO, device or socket cannot be read)");
  }
  size = static_cast<std::uint64_t>(st.st_size);
  return fd;
}

std::string prefix(const std::string& what, const std::string& path) { return what + " '" + path + "' "; }

}  // namespace

std::string read_regular_file(const std::string& path, const std::string& what, std::uint64_t max_bytes) {
  std::string text;
  int fd = -1;
  try {
    std::uint64_t size = 0;
    fd = open_regular(path, size);
    if (size > max_bytes)
      throw std::runtime_error("has " + std::to_string(size) + " bytes, more than the " + std::to_string(max_bytes) +
                               " allowed for a " + what);
    text.resize(static_cast<std::size_t>(size));
    std::uint64_t got = 0;
    while (got < size) {
      const ssize_t n = ::read(fd, text.data() + got, static_cast<std::size_t>(size - got));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw std::runtime_error(std::string("cannot be read: ") + std::strerror(errno));
      if (n == 0) break;
      got += static_cast<std::uint64_t>(n);
    }
    text.resize(static_cast<std::size_t>(got));  // a file that shrank while read: its bytes so far
    char extra = 0;
    if (::read(fd, &extra, 1) > 0) throw std::runtime_error("grew while it was read");
  } catch (const std::exception& e) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error(prefix(what, path) + e.what());
  }
  ::close(fd);
  return text;
}

std::string read_input_file(const comm::Communicator& comm, const std::string& path, const std::string& what,
                            std::uint64_t max_bytes) {
  std::string text, error;
  if (comm.is_root()) {
    try {
      text = read_regular_file(path, what, max_bytes);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  comm.agree<InputError>(error.empty(), error);
  return comm.broadcast(text);
}

std::uint64_t input_file_size(const comm::Communicator& comm, const std::string& path, const std::string& what) {
  std::uint64_t size = 0;
  std::string error;
  if (comm.is_root()) {
    try {
      ::close(open_regular(path, size));
    } catch (const std::exception& e) {
      error = prefix(what, path) + e.what();
    }
  }
  comm.agree<InputError>(error.empty(), error);
  SPOTRUN_MPI_CHECK(MPI_Bcast(&size, 1, MPI_UINT64_T, 0, comm.mpi()));
  return size;
}

}  // namespace spotrun::io
