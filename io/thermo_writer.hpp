#pragma once
// Thermo output: an aligned table on stdout and OUTDIR/thermo.csv, written by the root rank only.
#include <cstdio>
#include <string>
#include <vector>

namespace spotrun::io {

class ThermoWriter {
 public:
  // csv_path empty: no CSV. append: continue an existing CSV (resumed run) without a new header.
  ThermoWriter(bool is_root, const std::string& csv_path, std::vector<std::string> columns, bool append = false);
  ~ThermoWriter();
  ThermoWriter(const ThermoWriter&) = delete;
  ThermoWriter& operator=(const ThermoWriter&) = delete;

  void write(long long step, const std::vector<double>& values);

 private:
  bool m_root;
  std::FILE* m_csv = nullptr;
  std::vector<std::string> m_columns;
  bool m_header_printed = false;
};

}  // namespace spotrun::io
