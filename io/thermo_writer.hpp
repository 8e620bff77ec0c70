#pragma once
// Thermo output: an aligned table on stdout (or where set_printer() says) and OUTDIR/thermo.csv, written by the root rank only. Errors
// are returned, not thrown, so that the caller can agree on them with every rank.
#include <cstdio>
#include <functional>
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

  // "" when the CSV is open (or on ranks other than the root), else why it could not be opened.
  const std::string& open_error() const { return m_open_error; }
  // Prints a row and appends it to the CSV; returns "" or why the CSV row could not be written (root).
  std::string write(long long step, const std::vector<double>& values);
  // Prints a row on the table (root) without adding it to the CSV.
  void print_row(long long step, const std::vector<double>& values);
  // The step of the last row written (on every rank), -1 before the first.
  long long last_step() const { return m_last_step; }
  // Where the table's lines go, one line without its newline each (default: stdout).
  void set_printer(std::function<void(const std::string&)> print) { m_print = std::move(print); }

 private:
  bool m_root;
  std::string m_path;
  std::FILE* m_csv = nullptr;
  std::vector<std::string> m_columns;
  bool m_header_printed = false;
  long long m_last_step = -1;
  std::string m_open_error;
  std::function<void(const std::string&)> m_print;
};

}  // namespace spotrun::io
