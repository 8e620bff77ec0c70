#include "thermo_writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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

void ThermoWriter::print_row(long long step, const std::vector<double>& values) {
  if (!m_root) return;
  auto print = [this](const std::string& line) {
    if (m_print) {
      m_print(line);
    } else {
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    }
  };
  char field[64];
  if (!m_header_printed) {
    std::snprintf(field, sizeof field, "%10s", "Step");
    std::string line = field;
    for (const auto& c : m_columns) line += " " + std::string(std::max<std::size_t>(16, c.size()) - c.size(), ' ') + c;
    print(line);
    m_header_printed = true;
  }
  std::snprintf(field, sizeof field, "%10lld", step);
  std::string line = field;
  for (double v : values) {
    std::snprintf(field, sizeof field, " %16.10g", v);
    line += field;
  }
  print(line);
}

std::string ThermoWriter::write(long long step, const std::vector<double>& values) {
  m_last_step = step;
  if (!m_root) return {};
  print_row(step, values);
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
