#include "launcher/run/thermo_file.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "comm/errors.hpp"

namespace fs = std::filesystem;

namespace spotrun::launcher {

void truncate_thermo(const comm::Communicator& comm, const std::string& path, std::int64_t step,
                     const std::vector<std::string>& columns) {
  std::string want = "step";
  for (const auto& c : columns) want += "," + c;
  std::string error;
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (comm.is_root() && fs::exists(status) && !fs::is_regular_file(status))
    error = "'" + path + "' is not a regular file; move it away to resume in this output directory";
  if (comm.is_root() && error.empty()) {
    std::ifstream in(path);
    if (in) {
      std::string line, out, header;
      std::size_t fields = 0;
      while (std::getline(in, line)) {
        const std::size_t n = static_cast<std::size_t>(std::count(line.begin(), line.end(), ',')) + 1;
        if (header.empty()) {
          header = line;
          fields = n;
          if (header != want) {
            error = "'" + path + "' has the columns " + header + ", the deck's thermo columns are " + want +
                    " (changed since the checkpoint); keep the columns, or move thermo.csv away to resume here";
            break;
          }
          out += line + "\n";
          continue;
        }
        if (n != fields) continue;
        try {
          std::size_t used = 0;
          const std::string first = line.substr(0, line.find(','));
          if (std::stoll(first, &used) <= step && used == first.size()) out += line + "\n";
        } catch (...) {
        }
      }
      in.close();
      const std::string tmp = path + ".tmp";
      if (error.empty()) {
        std::ofstream o(tmp, std::ios::trunc | std::ios::binary);
        o << out;
        o.flush();
        if (!o) error = "cannot rewrite '" + path + "' (writing '" + tmp + "' failed)";
      }
      if (error.empty()) fs::rename(tmp, path, ec);
      if (error.empty() && ec) error = "cannot replace '" + path + "': " + ec.message();
      if (!error.empty()) fs::remove(tmp, ec);
    }
  }
  comm.agree<InputError>(error.empty(), error);
}

}  // namespace spotrun::launcher
