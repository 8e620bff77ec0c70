// The index of a level set (io/checkpoint_levels.hpp): OUTDIR/checkpoints/<set>.levels, its text, its atomic
// commit by rank 0 and its reading (docs/checkpoint-format.md, "Multilevel checkpoints").
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "checkpoint_levels.hpp"
#include "comm/errors.hpp"
#include "impl/checkpoint_levels_impl.hpp"

namespace spotrun::io {

using namespace impl;

std::string LevelIndex::encode() const {
  std::ostringstream o;
  o << k_index_magic << "\nset " << set << "\nstep " << step << "\nsolver " << solver << "\npartner " << (partner ? 1 : 0)
    << "\nnodes " << nodes.size() << "\n";
  for (std::size_t k = 0; k < nodes.size(); ++k) o << entry_line(static_cast<int>(k), nodes[k]) << "\n";
  o << "directory " << directory << "\n";
  const std::string body = o.str();
  return body + "end " + hex16(XXH3_64bits(body.data(), body.size())) + "\n";
}

LevelIndex LevelIndex::decode(const std::string& text) {
  const auto end = text.rfind("end ");
  if (text.compare(0, std::strlen(k_index_magic) + 1, std::string(k_index_magic) + "\n") != 0)
    throw std::runtime_error("not a spotrun checkpoint index (no '" + std::string(k_index_magic) + "' line)");
  if (end == std::string::npos || (end > 0 && text[end - 1] != '\n') ||
      text.substr(end) != "end " + hex16(XXH3_64bits(text.data(), end)) + "\n")
    throw std::runtime_error("the index does not match its own hash (its 'end' line): damaged or truncated");
  LevelIndex x;
  std::istringstream in(text.substr(0, end));
  std::string line;
  std::getline(in, line);
  std::size_t count = 0;
  bool have_dir = false;
  while (std::getline(in, line)) {
    const auto sp = line.find(' ');
    const std::string key = line.substr(0, sp), value = sp == std::string::npos ? "" : line.substr(sp + 1);
    if (key == "set") x.set = value;
    else if (key == "step") x.step = std::stoll(value);
    else if (key == "solver") x.solver = value;
    else if (key == "partner") x.partner = value == "1";
    else if (key == "nodes") count = std::stoull(value);
    else if (key == "directory") x.directory = value, have_dir = true;
    else if (key == "node") {
      int k = -1;
      LevelFile f = parse_entry(line, k);
      if (k != static_cast<int>(x.nodes.size())) throw std::runtime_error("node lines out of order");
      x.nodes.push_back(f);
    } else {
      throw std::runtime_error("unknown line '" + line + "'");
    }
  }
  if (x.set.empty() || x.solver.empty() || !have_dir || x.directory.empty() || count == 0 || x.nodes.size() != count ||
      x.step < 0)
    throw std::runtime_error("the index lacks its set, step, solver, directory or node lines");
  return x;
}

void commit_level_index(const comm::Communicator& world, const std::string& path, const LevelIndex& index) {
  std::string error;
  if (world.is_root()) {
    const std::string tmp = path + ".tmp", text = index.encode();
    try {
      const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) throw std::runtime_error("cannot create '" + tmp + "': " + errno_text());
      const ssize_t n = ::write(fd, text.data(), text.size());
      const int err = errno;
      const int rc = ::fdatasync(fd);
      ::close(fd);
      if (n != static_cast<ssize_t>(text.size())) throw std::runtime_error("writing '" + tmp + "' failed: " + std::strerror(err));
      if (rc != 0) throw std::runtime_error("fsync of '" + tmp + "' failed: " + errno_text());
      if (::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot rename '" + tmp + "': " + errno_text());
      const auto slash = path.find_last_of('/');
      fsync_path(slash == std::string::npos ? "." : path.substr(0, slash), true);
    } catch (const std::exception& e) {
      error = "checkpoint index '" + path + "': " + e.what();
      ::unlink(tmp.c_str());
    }
  }
  world.agree<std::runtime_error>(error.empty(), error);
}

LevelIndex read_level_index(const comm::Communicator& world, const std::string& path) {
  std::string text, error;
  if (world.is_root()) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    struct stat st {};
    if (fd < 0) {
      error = errno == ENOENT ? "no such file" : "cannot open it: " + errno_text();
    } else if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      error = "not a regular file";
    } else if (static_cast<std::uint64_t>(st.st_size) > k_index_max_bytes) {
      error = "it has " + std::to_string(st.st_size) + " bytes, an index at most " + std::to_string(k_index_max_bytes);
    } else {
      text.resize(static_cast<std::size_t>(st.st_size));
      if (::pread(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) error = "reading it failed";
    }
    if (fd >= 0) ::close(fd);
  }
  world.agree<InputError>(error.empty(), "checkpoint index '" + path + "': " + error);
  text = world.broadcast(text);
  try {
    return LevelIndex::decode(text);
  } catch (const std::exception& e) {
    throw InputError("checkpoint index '" + path + "': " + e.what());
  }
}

}  // namespace spotrun::io
