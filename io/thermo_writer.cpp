#include "thermo_writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace spotrun::io {

ThermoWriter::ThermoWriter(bool is_root, const std::string& csv_path, std::vector<std::string> columns, bool append)
    : m_root(is_root), m_path(csv_path), m_columns(std::move(columns)) {
  if (!m_root || csv_path.empty()) return;
  // O_NONBLOCK: a FIFO in its place is refused, not waited on; only a regular file is written.
  const int fd = ::open(csv_path.c_str(), O_WRONLY | O_CREAT | O_NONBLOCK | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    m_open_error = "cannot open '" + csv_path + "' for writing: " +
                   (fd < 0 ? std::string(std::strerror(errno)) : std::string("not a regular file"));
    if (fd >= 0) ::close(fd);
    return;
  }
  m_csv = ::fdopen(fd, append ? "a" : "w");
  if (!m_csv) {
    m_open_error = "cannot open '" + csv_path + "' for writing: " + std::strerror(errno);
    ::close(fd);
    return;
  }
  if (!append) {
    std::fprintf(m_csv, "step");
    for (const auto& c : m_columns) std::fprintf(m_csv, ",%s", c.c_str());
    std::fprintf(m_csv, "\n");
    if (std::fflush(m_csv) != 0 || std::ferror(m_csv)) {
      m_open_error = "cannot write '" + csv_path + "': " + std::strerror(errno);
      std::fclose(m_csv);
      m_csv = nullptr;
    }
  }
}

ThermoWriter::~ThermoWriter() {
  if (m_csv) std::fclose(m_csv);
}

std::string ThermoWriter::write(long long step, const std::vector<double>& values) {
  if (!m_root) return {};
  if (!m_header_printed) {
    std::printf("%10s", "Step");
    for (const auto& c : m_columns) std::printf(" %16s", c.c_str());
    std::printf("\n");
    m_header_printed = true;
  }
  std::printf("%10lld", step);
  for (double v : values) std::printf(" %16.10g", v);
  std::printf("\n");
  std::fflush(stdout);
  if (!m_csv) return {};
  // One row in one buffered write; a failed write (a full disk) is reported, and the stream is reset so
  // that the next row is tried again.
  std::fprintf(m_csv, "%lld", step);
  for (double v : values) std::fprintf(m_csv, ",%.17g", v);
  std::fprintf(m_csv, "\n");
  if (std::fflush(m_csv) != 0 || std::ferror(m_csv)) {
    const int err = errno;
    std::clearerr(m_csv);
    return "writing the thermo row of step " + std::to_string(step) + " to '" + m_path + "' failed: " + std::strerror(err);
  }
  return {};
}

}  // namespace spotrun::io
