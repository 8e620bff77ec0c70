// What the parts of a level set share (io/impl/checkpoint_levels_impl.hpp): texts packed for a collective,
// the node file's /meta/level, the index's node lines, small file helpers.
#include "checkpoint_levels_impl.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace spotrun::io::impl {


// Seconds the calling thread has spent ready to run but waiting for a CPU (the second field of Linux's
// /proc/thread-self/schedstat, in ns); -1 where the kernel does not say.
double run_delay_seconds() {
  std::FILE* f = std::fopen("/proc/thread-self/schedstat", "re");
  if (!f) return -1;
  unsigned long long on_cpu = 0, delay = 0;
  const int got = std::fscanf(f, "%llu %llu", &on_cpu, &delay);
  std::fclose(f);
  return got == 2 ? static_cast<double>(delay) * 1e-9 : -1;
}

std::string hex16(std::uint64_t v) {
  char t[20];
  std::snprintf(t, sizeof t, "%016" PRIx64, v);
  return t;
}

std::string errno_text() { return std::strerror(errno); }

void fsync_path(const std::string& p, bool directory) {
  const int fd = ::open(p.c_str(), O_RDONLY | (directory ? O_DIRECTORY : 0));
  if (fd < 0) throw std::runtime_error("cannot open '" + p + "' to sync it: " + errno_text());
  const int rc = directory ? ::fsync(fd) : ::fdatasync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw std::runtime_error("fsync of '" + p + "' failed: " + std::strerror(err));
}

bool is_regular(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Strings packed with their lengths, for all_gather and broadcast of several texts at once.
void pack(std::string& out, const std::string& s) { out += std::to_string(s.size()) + ':' + s; }
std::string unpack(const std::string& in, std::size_t& at) {
  const auto colon = in.find(':', at);
  if (colon == std::string::npos) throw std::runtime_error("internal: bad packed text");
  const std::size_t n = std::stoull(in.substr(at, colon - at));
  std::string s = in.substr(colon + 1, n);
  at = colon + 1 + n;
  return s;
}

namespace {

std::string bits_text(double v) {
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return hex16(b);
}
double text_bits(const std::string& t) {
  const std::uint64_t b = std::stoull(t, nullptr, 16);
  double v = 0;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

}  // namespace

std::string pack_meta(const CheckpointMeta& m) {
  std::string s;
  for (const std::string* f : {&m.solver, &m.deck, &m.physics, &m.units, &m.version, &m.git_hash, &m.level}) pack(s, *f);
  pack(s, std::to_string(m.step));
  pack(s, bits_text(m.time));
  pack(s, std::to_string(m.nranks));
  return s;
}
CheckpointMeta unpack_meta(const std::string& s, std::size_t& at) {
  CheckpointMeta m;
  for (std::string* f : {&m.solver, &m.deck, &m.physics, &m.units, &m.version, &m.git_hash, &m.level}) *f = unpack(s, at);
  m.step = std::stoll(unpack(s, at));
  m.time = text_bits(unpack(s, at));
  m.nranks = std::stoi(unpack(s, at));
  return m;
}

std::string pack_scalars(const SolverState& st) {
  std::string s;
  pack(s, std::to_string(st.reals.size()));
  for (const auto& [k, v] : st.reals) pack(s, k), pack(s, bits_text(v));
  pack(s, std::to_string(st.integers.size()));
  for (const auto& [k, v] : st.integers) pack(s, k), pack(s, std::to_string(v));
  pack(s, std::to_string(st.strings.size()));
  for (const auto& [k, v] : st.strings) pack(s, k), pack(s, v);
  return s;
}
void unpack_scalars(const std::string& s, SolverState& st) {
  std::size_t at = 0;
  for (std::size_t n = std::stoull(unpack(s, at)); n > 0; --n) {
    const std::string k = unpack(s, at);
    st.reals[k] = text_bits(unpack(s, at));
  }
  for (std::size_t n = std::stoull(unpack(s, at)); n > 0; --n) {
    const std::string k = unpack(s, at);
    st.integers[k] = std::stoll(unpack(s, at));
  }
  for (std::size_t n = std::stoull(unpack(s, at)); n > 0; --n) {
    const std::string k = unpack(s, at);
    st.strings[k] = unpack(s, at);
  }
}

NodeLevel parse_level(const std::string& text) {
  NodeLevel l;
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != k_level_magic) throw std::runtime_error("/meta/level does not start with '" + std::string(k_level_magic) + "'");
  while (std::getline(in, line)) {
    std::istringstream w(line);
    std::string key;
    w >> key;
    if (key == "set") {
      w >> l.set;
    } else if (key == "host") {
      w >> l.host;
    } else if (key == "node") {
      std::string of;
      w >> l.node >> of >> l.nodes;
    } else if (key == "array") {
      std::string name;
      std::uint64_t rows = 0;
      w >> name >> rows;
      l.global_rows[name] = rows;
    } else if (key == "block") {
      std::string name;
      LevelBlock b;
      w >> name >> b.global_first >> b.rows >> b.node_first;
      l.blocks[name].push_back(b);
    } else {
      throw std::runtime_error("/meta/level has an unknown line '" + line + "'");
    }
    if (w.fail()) throw std::runtime_error("/meta/level has a malformed line '" + line + "'");
  }
  if (l.set.empty() || l.node < 0 || l.nodes < 1 || l.node >= l.nodes) throw std::runtime_error("/meta/level lacks its set or node");
  for (auto& [name, v] : l.blocks) {
    if (!l.global_rows.count(name)) throw std::runtime_error("/meta/level: blocks of '" + name + "' without its array line");
    std::sort(v.begin(), v.end(), [](const LevelBlock& a, const LevelBlock& b) { return a.node_first < b.node_first; });
  }
  return l;
}

LevelFile parse_entry(const std::string& line, int& node) {
  std::istringstream w(line);
  LevelFile f;
  std::string word;
  w >> word >> node >> f.host >> f.file >> f.size >> f.manifest_id >> f.partner_host;
  if (word != "node" || w.fail() || f.manifest_id.size() != 16) throw std::runtime_error("malformed node line '" + line + "'");
  if (f.partner_host == "-") f.partner_host.clear();
  if (f.file.find('/') != std::string::npos || f.file.empty() || f.file[0] == '.')
    throw std::runtime_error("node file name '" + f.file + "' is not a plain file name");
  return f;
}

std::string entry_line(int node, const LevelFile& f) {
  return "node " + std::to_string(node) + " " + f.host + " " + f.file + " " + std::to_string(f.size) + " " +
         f.manifest_id + " " + (f.partner_host.empty() ? "-" : f.partner_host);
}

}  // namespace spotrun::io::impl
