#include "thermo_writer.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace spotrun::io {

ThermoWriter::ThermoWriter(bool is_root, const std::string& csv_path, std::vector<std::string> columns, bool append)
    : m_root(is_root), m_columns(std::move(columns)) {
  if (!m_root || csv_path.empty()) return;
  m_csv = std::fopen(csv_path.c_str(), append ? "a" : "w");
  if (!m_csv) throw std::runtime_error("cannot open '" + csv_path + "' for writing: " + std::strerror(errno));
  if (!append) {
    std::fprintf(m_csv, "step");
    for (const auto& c : m_columns) std::fprintf(m_csv, ",%s", c.c_str());
    std::fprintf(m_csv, "\n");
    std::fflush(m_csv);
  }
}

ThermoWriter::~ThermoWriter() {
  if (m_csv) std::fclose(m_csv);
}

void ThermoWriter::write(long long step, const std::vector<double>& values) {
  if (!m_root) return;
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
  if (m_csv) {
    std::fprintf(m_csv, "%lld", step);
    for (double v : values) std::fprintf(m_csv, ",%.17g", v);
    std::fprintf(m_csv, "\n");
    std::fflush(m_csv);
  }
}

}  // namespace spotrun::io
