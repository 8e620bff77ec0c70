// Multilevel checkpoints: node files in node-local directories, partner copies sent over MPI, the index
// that commits a set, and the reader that assembles a set from the copies the nodes of a run hold (see
// checkpoint_levels.hpp and docs/checkpoint-format.md, "Multilevel checkpoints").
#include "checkpoint_levels.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "comm/errors.hpp"
#include "file_manifest.hpp"
#include "run_directory.hpp"

namespace spotrun::io {
namespace {

constexpr const char* k_index_magic = "spotrun-checkpoint-levels 1";
constexpr const char* k_level_magic = "spotrun-level 1";
constexpr std::uint64_t k_index_max_bytes = std::uint64_t(1) << 20;

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
constexpr std::uint64_t k_chunk = std::uint64_t(64) << 20;  // bytes per message of a partner copy
constexpr int k_tag_header = 7401, k_tag_data = 7402;

std::string hex16(std::uint64_t v) {
  char t[20];
  std::snprintf(t, sizeof t, "%016" PRIx64, v);
  return t;
}

std::string errno_text() { return std::strerror(errno); }

std::string manifest_id(const FileManifest& m) {
  const std::string text = m.encode();
  return hex16(XXH3_64bits(text.data(), text.size()));
}

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

// /meta/level of a node file: which rows of the run's arrays it holds.
struct LevelBlock {
  std::uint64_t global_first = 0, rows = 0, node_first = 0;
};
struct NodeLevel {
  std::string set, host;
  int node = -1, nodes = 0;
  std::map<std::string, std::uint64_t> global_rows;            // per array
  std::map<std::string, std::vector<LevelBlock>> blocks;       // per array, by node_first
};

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

// Leader of node k: sends its node file to the next node's leader and keeps the previous node's file as a
// partner copy in DIRECTORY/partner. Every leader goes through every message whatever fails, so that none
// waits for another; returns "" or what failed.
std::string exchange_with_partner(const NodeGroups& nodes, const std::string& directory, const LevelFile& own,
                                  const std::string& own_path, const std::string& own_manifest) {
  const MPI_Comm w = nodes.world().mpi();
  const int n = nodes.count(), k = nodes.index();
  const int to = nodes.leader((k + 1) % n), from = nodes.leader((k + n - 1) % n);
  std::string error;
  auto fail = [&](const std::string& e) {
    if (error.empty()) error = "partner copy of node file '" + own.file + "' (from host " + nodes.hosts()[(k + n - 1) % n] +
                               " to host " + nodes.host() + "): " + e;
  };
  const int in_fd = ::open(own_path.c_str(), O_RDONLY | O_CLOEXEC);
  std::string send_error = in_fd < 0 ? "cannot open '" + own_path + "' to send it: " + errno_text() : "";
  // Header: the file's name, its manifest id and size (size ~0: nothing follows, the sender failed).
  const std::uint64_t send_size = in_fd < 0 ? ~std::uint64_t(0) : own.size;
  // Then the manifest's text, so that the receiver hashes the blocks as they arrive.
  std::string header = own.file + "\n" + own.manifest_id + "\n" + std::to_string(send_size) + "\n" + own_manifest;
  std::uint64_t header_size = header.size(), recv_header_size = 0;
  SPOTRUN_MPI_CHECK(MPI_Sendrecv(&header_size, 1, MPI_UINT64_T, to, k_tag_header, &recv_header_size, 1, MPI_UINT64_T, from,
                                 k_tag_header, w, MPI_STATUS_IGNORE));
  std::string recv_header(recv_header_size, '\0');
  SPOTRUN_MPI_CHECK(MPI_Sendrecv(header.data(), static_cast<int>(header_size), MPI_CHAR, to, k_tag_header,
                                 recv_header.data(), static_cast<int>(recv_header_size), MPI_CHAR, from, k_tag_header, w,
                                 MPI_STATUS_IGNORE));
  std::istringstream hin(recv_header);
  std::string name, id, size_text;
  std::getline(hin, name);
  std::getline(hin, id);
  std::getline(hin, size_text);
  std::uint64_t recv_size = 0;
  try {
    recv_size = std::stoull(size_text);
  } catch (const std::exception&) {
    recv_size = ~std::uint64_t(0);
  }
  // The sent file's manifest: every block is hashed as it arrives (no second read of the copy).
  FileManifest manifest;
  {
    std::string text((std::istreambuf_iterator<char>(hin)), std::istreambuf_iterator<char>());
    try {
      manifest = FileManifest::decode(text);
      if (manifest_id(manifest) != id) throw std::runtime_error("its id is not the one announced");
      if (recv_size != ~std::uint64_t(0) && manifest.file_size != recv_size) throw std::runtime_error("its size is not the file's");
    } catch (const std::exception& e) {
      fail(std::string("the manifest sent is unusable: ") + e.what());
    }
  }
  XXH3_state_t block_state;
  XXH3_INITSTATE(&block_state);
  std::uint64_t block = 0;  // the block being hashed
  bool block_open = false;
  auto hash_received = [&](const char* data, std::uint64_t at, std::uint64_t n) {
    if (!error.empty() || manifest.block_size == 0) return;
    const std::uint64_t end = at + n;
    for (std::uint64_t pos = std::max(at, manifest.userblock); pos < end && error.empty();) {
      const std::uint64_t b = (pos - manifest.userblock) / manifest.block_size;
      const std::uint64_t b_end = std::min(manifest.file_size, manifest.userblock + (b + 1) * manifest.block_size);
      if (!block_open || b != block) {
        XXH3_64bits_reset_withSeed(&block_state, b);
        block = b;
        block_open = true;
      }
      const std::uint64_t upto = std::min(end, b_end);
      XXH3_64bits_update(&block_state, data + (pos - at), upto - pos);
      pos = upto;
      if (pos == b_end) {
        block_open = false;
        if (b >= manifest.hashes.size() || XXH3_64bits_digest(&block_state) != manifest.hashes[b])
          fail("bytes " + std::to_string(manifest.userblock + b * manifest.block_size) + ".." + std::to_string(b_end - 1) +
               " (block " + std::to_string(b) + ") do not match the manifest as they arrive");
      }
    }
  };
  if (recv_size == ~std::uint64_t(0)) {
    fail("the sending node could not read its file");
    recv_size = 0;
  }
  if (name.empty() || name.find('/') != std::string::npos || name[0] == '.') fail("a file name '" + name + "' was sent");
  const std::string partner_dir = directory + "/partner";
  const std::string final_path = partner_dir + "/" + name, tmp = final_path + ".tmp";
  int out_fd = -1;
  if (error.empty()) {
    out_fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out_fd < 0) fail("cannot create '" + tmp + "': " + errno_text());
  }
  const std::uint64_t my_send = in_fd < 0 ? 0 : own.size;
  std::vector<char> sbuf(std::min(k_chunk, std::max<std::uint64_t>(my_send, 1))),
      rbuf(std::min(k_chunk, std::max<std::uint64_t>(recv_size, 1)));
  for (std::uint64_t sent = 0, got = 0; sent < my_send || got < recv_size;) {
    const std::uint64_t ns = std::min(k_chunk, my_send - sent), nr = std::min(k_chunk, recv_size - got);
    if (ns > 0) {
      for (std::uint64_t done = 0; done < ns;) {
        const ssize_t r = ::pread(in_fd, sbuf.data() + done, ns - done, static_cast<off_t>(sent + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {  // the receiver's verification refuses what arrives instead
          if (send_error.empty()) send_error = "reading '" + own_path + "' failed: " + (r < 0 ? errno_text() : "it ended early");
          std::fill(sbuf.begin() + static_cast<std::ptrdiff_t>(done), sbuf.begin() + static_cast<std::ptrdiff_t>(ns), 0);
          break;
        }
        done += static_cast<std::uint64_t>(r);
      }
    }
    MPI_Request req[2];
    int nreq = 0;
    if (nr > 0) SPOTRUN_MPI_CHECK(MPI_Irecv(rbuf.data(), static_cast<int>(nr), MPI_BYTE, from, k_tag_data, w, &req[nreq++]));
    if (ns > 0) SPOTRUN_MPI_CHECK(MPI_Isend(sbuf.data(), static_cast<int>(ns), MPI_BYTE, to, k_tag_data, w, &req[nreq++]));
    SPOTRUN_MPI_CHECK(MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE));
    hash_received(rbuf.data(), got, nr);
    for (std::uint64_t done = 0; out_fd >= 0 && done < nr;) {
      const ssize_t r = ::pwrite(out_fd, rbuf.data() + done, nr - done, static_cast<off_t>(got + done));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        fail("writing '" + tmp + "' failed: " + errno_text());
        ::close(out_fd);
        out_fd = -1;
        break;
      }
      done += static_cast<std::uint64_t>(r);
    }
    sent += ns;
    got += nr;
  }
  if (in_fd >= 0) ::close(in_fd);
  if (out_fd >= 0) ::close(out_fd);
  if (!send_error.empty() && error.empty()) error = send_error;
  if (error.empty()) {
    try {
      // Every block was hashed as it arrived; the copy's own manifest (its first bytes, from the page cache)
      // must be the one sent. No fsync: a partner copy guards against losing the other node, and a crash of
      // this node loses its page cache and the copy with it (docs/checkpoints.md).
      comm::Communicator self(MPI_COMM_SELF);
      if (manifest_id(peek_manifest(self, tmp)) != id) throw std::runtime_error("the copy's manifest is not the sent file's");
      if (::rename(tmp.c_str(), final_path.c_str()) != 0)
        throw std::runtime_error("cannot rename '" + tmp + "' to '" + final_path + "': " + errno_text());
    } catch (const std::exception& e) {
      fail(e.what());
    }
  }
  if (!error.empty()) ::unlink(tmp.c_str());
  return error;
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

}  // namespace

// ---- NodeGroups ----------------------------------------------------------------------------------------------

NodeGroups::NodeGroups(const comm::Communicator& world, const std::string& host) : m_world(world) {
  const std::string mine = host_file_part(host);
  const std::vector<std::string> all = world.all_gather(mine);
  std::set<std::string> unique(all.begin(), all.end());
  m_hosts.assign(unique.begin(), unique.end());
  m_index = static_cast<int>(std::lower_bound(m_hosts.begin(), m_hosts.end(), mine) - m_hosts.begin());
  m_leaders.assign(m_hosts.size(), -1);
  for (int r = static_cast<int>(all.size()) - 1; r >= 0; --r)
    m_leaders[std::lower_bound(m_hosts.begin(), m_hosts.end(), all[r]) - m_hosts.begin()] = r;
  SPOTRUN_MPI_CHECK(MPI_Comm_split(world.mpi(), m_index, world.rank(), &m_mpi));
  m_node = std::make_unique<comm::Communicator>(m_mpi);
}

NodeGroups::~NodeGroups() {
  m_node.reset();
  if (m_mpi != MPI_COMM_NULL) MPI_Comm_free(&m_mpi);
}

std::string level_directory(const std::string& local_dir, const std::string& outdir) {
  std::string absolute = outdir;
  if (absolute.empty() || absolute[0] != '/') {
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof cwd)) absolute = std::string(cwd) + "/" + outdir;
  }
  while (absolute.size() > 1 && absolute.back() == '/') absolute.pop_back();
  const std::string name = absolute.substr(absolute.find_last_of('/') + 1);
  std::string dir = local_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir + "/spotrun-" + host_file_part(name) + "-" + hex16(XXH3_64bits(absolute.data(), absolute.size())).substr(0, 8);
}

std::string host_file_part(const std::string& host) {
  std::string s = host.empty() ? std::string("host") : host;
  for (char& c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
      c = '_';
  if (s[0] == '.') s[0] = '_';
  return s;
}

// ---- the index -----------------------------------------------------------------------------------------------

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

// ---- writing a set ------------------------------------------------------------------------------------------------

LevelIndex write_level_set(const NodeGroups& nodes, const std::string& directory, const std::string& set, bool partner,
                           const CheckpointMeta& meta, SolverState& state, LevelWriteTimes* times) {
  const comm::Communicator& world = nodes.world();
  const comm::Communicator& node = nodes.node();
  if (partner && nodes.count() < 2)
    throw std::runtime_error("checkpoint " + set + ": a partner copy needs at least 2 nodes, this run has 1 (host " +
                             nodes.host() + ")");
  const double t0 = MPI_Wtime();
  // The rows of the node's ranks, in the order of their global rows, make the node file's rows.
  const std::size_t na = state.arrays.size();
  std::vector<std::uint64_t> mine(2 * na), all(2 * na * node.size());
  for (std::size_t i = 0; i < na; ++i) mine[2 * i] = state.arrays[i].first_row, mine[2 * i + 1] = state.arrays[i].rows;
  if (na > 0)
    SPOTRUN_MPI_CHECK(MPI_Allgather(mine.data(), static_cast<int>(2 * na), MPI_UINT64_T, all.data(), static_cast<int>(2 * na),
                                    MPI_UINT64_T, node.mpi()));
  std::ostringstream level;
  level << k_level_magic << "\nset " << set << "\nnode " << nodes.index() << " of " << nodes.count() << "\nhost "
        << nodes.host() << "\n";
  for (std::size_t i = 0; i < na; ++i) {
    StateArray& a = state.arrays[i];
    std::vector<std::pair<std::uint64_t, int>> blocks;  // (global first row, node rank)
    for (int r = 0; r < node.size(); ++r)
      if (all[2 * na * r + 2 * i + 1] > 0) blocks.emplace_back(all[2 * na * r + 2 * i], r);
    std::sort(blocks.begin(), blocks.end());
    level << "array " << a.name << " " << a.global_rows << "\n";
    std::uint64_t at = 0, my_first = 0;
    for (const auto& [first, r] : blocks) {
      const std::uint64_t rows = all[2 * na * r + 2 * i + 1];
      level << "block " << a.name << " " << first << " " << rows << " " << at << "\n";
      if (r == node.rank()) my_first = at;
      at += rows;
    }
    a.global_rows = at;
    a.first_row = a.rows > 0 ? my_first : 0;
  }
  CheckpointMeta m = meta;
  m.level = level.str();
  LevelFile own;
  own.host = nodes.host();
  own.file = node_file_name(set, nodes.host());  // io/run_directory.hpp
  const std::string path = directory + "/" + own.file;
  std::string error, own_manifest;
  try {
    write_checkpoint(node, path, m, state);  // collective on the node: every rank of it throws together
    const FileManifest fm = peek_manifest(node, path);
    own.size = fm.file_size;
    own.manifest_id = manifest_id(fm);
    own_manifest = fm.encode();
  } catch (const std::exception& e) {
    error = "host " + nodes.host() + ": " + e.what();
  }
  world.agree<std::runtime_error>(error.empty(), error);
  const double t1 = MPI_Wtime();
  if (partner) {
    own.partner_host = nodes.hosts()[(nodes.index() + 1) % nodes.count()];
    if (nodes.is_leader()) error = exchange_with_partner(nodes, directory, own, path, own_manifest);
    world.agree<std::runtime_error>(error.empty(), error);
  }
  const double t2 = MPI_Wtime();
  const std::vector<std::string> lines = world.all_gather(nodes.is_leader() ? entry_line(nodes.index(), own) : std::string());
  LevelIndex index;
  index.set = set;
  index.step = meta.step;
  index.solver = meta.solver;
  index.directory = directory;
  index.partner = partner;
  index.nodes.resize(nodes.count());
  for (int k = 0; k < nodes.count(); ++k) {
    int at = -1;
    index.nodes[k] = parse_entry(lines[nodes.leader(k)], at);
  }
  if (times) {
    times->local = world.max(t1 - t0);
    times->partner = world.max(t2 - t1);
  }
  return index;
}

void lower_thread_priority(int nice) {
  const id_t tid = static_cast<id_t>(::syscall(SYS_gettid));
  errno = 0;
  const int now = ::getpriority(PRIO_PROCESS, tid);
  if (errno == 0 && nice > now) ::setpriority(PRIO_PROCESS, tid, std::min(19, nice));
}

// ---- writing a set in the background ------------------------------------------------------------------------------

struct LevelSetWriter::Impl {
  MPI_Comm world_mpi = MPI_COMM_NULL;  // the thread's
  MPI_Comm agree_mpi = MPI_COMM_NULL;  // the caller's agreement that every thread has ended
  std::unique_ptr<comm::Communicator> world;
  std::unique_ptr<NodeGroups> nodes;
  std::thread thread;
  std::atomic<bool> done{false};  // this rank's thread has ended: `outcome` and `written` are its results
  bool busy = false;              // a set in flight (the same on every rank)
  Outcome outcome;
  LevelIndex written, committed;
  SolverState state;  // the set's, the thread's while it runs; then the caller's again (take_spent)
  int nice = 10;  // the thread's (lower_thread_priority)
  MPI_Request request = MPI_REQUEST_NULL;
  double send[3] = {0, 0, 0}, recv[3] = {0, 0, 0};  // {not ended, seconds, cost}, the max over the ranks

  Outcome finish(double seconds, double cost) {
    if (thread.joinable()) thread.join();
    busy = false;
    outcome.seconds = seconds;
    outcome.cost = cost;
    if (outcome.error.empty()) committed = written;
    return outcome;
  }
};

LevelSetWriter::LevelSetWriter(const comm::Communicator& world, const std::string& host, int nice)
    : m_impl(std::make_unique<Impl>()) {
  m_impl->nice = nice;
  SPOTRUN_MPI_CHECK(MPI_Comm_dup(world.mpi(), &m_impl->world_mpi));
  SPOTRUN_MPI_CHECK(MPI_Comm_dup(world.mpi(), &m_impl->agree_mpi));
  m_impl->world = std::make_unique<comm::Communicator>(m_impl->world_mpi);
  m_impl->nodes = std::make_unique<NodeGroups>(*m_impl->world, host);
}

LevelSetWriter::~LevelSetWriter() {
  Impl& w = *m_impl;
  if (w.thread.joinable()) w.thread.join();
  w.nodes.reset();
  w.world.reset();
  if (w.world_mpi != MPI_COMM_NULL) MPI_Comm_free(&w.world_mpi);
  // A pending agreement (an error path: the other ranks may never post theirs) is left to MPI_Finalize.
  if (w.request == MPI_REQUEST_NULL && w.agree_mpi != MPI_COMM_NULL) MPI_Comm_free(&w.agree_mpi);
}

void LevelSetWriter::start(const std::string& directory, bool partner, const std::string& set,
                           const std::string& index_path, const CheckpointMeta& meta, SolverState state) {
  Impl& w = *m_impl;
  if (w.busy) throw std::logic_error("internal: checkpoint set " + set + " started while " + w.outcome.set + " is in flight");
  w.done.store(false);
  w.outcome = Outcome{set, index_path, meta.step, "", {}, 0};
  // The thread takes no signal (a stop signal is the caller's; the thread's writes see no EINTR).
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &before);
  struct Restore {
    sigset_t* mask;
    ~Restore() { pthread_sigmask(SIG_SETMASK, mask, nullptr); }
  } restore{&before};
  w.state = std::move(state);
  w.thread = std::thread([&w, directory, partner, meta]() {
    // Below the loop (nice 10 by default), so that where the rank's cores are shared (mpirun and srun bind a
    // rank to its cores) the loop goes first and the background write takes the idle time. Not at 19: the
    // loop's halo exchange then waited on the writer's MPI calls (the same progress engine and locks), which
    // got a CPU 1.5 % of the time (MD at 2M atoms on 2 ranks: Comm 12-14 s against 2-3 s at 10).
    lower_thread_priority(w.nice);
    const double delay0 = run_delay_seconds();
    const double t0 = MPI_Wtime();
    try {
      // Both agree on every failure among the threads of every rank: the outcome is the same everywhere.
      w.written = write_level_set(*w.nodes, directory, w.outcome.set, partner, meta, w.state, &w.outcome.times);
      commit_level_index(*w.world, w.outcome.index_path, w.written);
    } catch (const std::exception& e) {
      w.outcome.error = e.what();
    }
    w.outcome.seconds = MPI_Wtime() - t0;
    const double delay1 = run_delay_seconds();
    w.outcome.cost = delay0 >= 0 && delay1 >= delay0 ? std::max(0.0, w.outcome.seconds - (delay1 - delay0)) : w.outcome.seconds;
    w.done.store(true, std::memory_order_release);
  });
  w.busy = true;
}

bool LevelSetWriter::in_flight() const { return m_impl->busy; }

SolverState LevelSetWriter::take_spent() {
  Impl& w = *m_impl;
  if (w.busy) throw std::logic_error("internal: the state of checkpoint set " + w.outcome.set + " taken while it is written");
  return std::exchange(w.state, SolverState{});
}

const LevelIndex& LevelSetWriter::index() const { return m_impl->committed; }

std::optional<LevelSetWriter::Outcome> LevelSetWriter::poll() {
  Impl& w = *m_impl;
  if (!w.busy) return std::nullopt;
  if (w.request != MPI_REQUEST_NULL) {
    // Posted by every rank at the previous call: complete, or nearly, by now; every rank sees the same result.
    SPOTRUN_MPI_CHECK(MPI_Wait(&w.request, MPI_STATUS_IGNORE));
    if (w.recv[0] == 0) return w.finish(w.recv[1], w.recv[2]);
  }
  const bool ended = w.done.load(std::memory_order_acquire);
  w.send[0] = ended ? 0 : 1;
  w.send[1] = ended ? w.outcome.seconds : 0;
  w.send[2] = ended ? w.outcome.cost : 0;
  SPOTRUN_MPI_CHECK(MPI_Iallreduce(w.send, w.recv, 3, MPI_DOUBLE, MPI_MAX, w.agree_mpi, &w.request));
  return std::nullopt;
}

std::optional<LevelSetWriter::Outcome> LevelSetWriter::wait() {
  Impl& w = *m_impl;
  if (!w.busy) return std::nullopt;
  if (w.request != MPI_REQUEST_NULL) SPOTRUN_MPI_CHECK(MPI_Wait(&w.request, MPI_STATUS_IGNORE));
  w.thread.join();  // every rank's thread ends: their collectives are among themselves
  double times[2] = {w.outcome.seconds, w.outcome.cost};
  SPOTRUN_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, times, 2, MPI_DOUBLE, MPI_MAX, w.agree_mpi));
  return w.finish(times[0], times[1]);
}

// ---- reading a set -------------------------------------------------------------------------------------------

struct LevelSetReader::Impl {
  const NodeGroups& nodes;
  std::string path;
  LevelIndex index;
  CheckpointMeta meta;
  std::uint64_t bytes = 0;
  std::vector<std::string> sources;
  std::vector<std::string> skipped;
  std::vector<int> reader_node;                             // per node file: the node of this run that reads it
  std::vector<std::string> read_path;                       // per node file: the copy it reads
  std::vector<std::unique_ptr<CheckpointReader>> readers;   // per node file: open on this rank's node, else null
  std::vector<NodeLevel> levels;                            // per node file
  std::map<std::string, std::uint64_t> global_rows;         // per array
};

LevelSetReader::LevelSetReader(const NodeGroups& nodes, const std::string& index_path, const std::string& durable_dir)
    : m_impl(std::make_unique<Impl>(Impl{nodes, index_path, {}, {}, 0, {}, {}, {}, {}, {}, {}, {}})) {
  Impl& r = *m_impl;
  const comm::Communicator& world = nodes.world();
  const comm::Communicator& node = nodes.node();
  const std::string what = "checkpoint " + index_path;
  r.index = read_level_index(world, index_path);
  const LevelIndex& x = r.index;
  const std::size_t nf = x.nodes.size();
  // The copies each node holds: its leader looks in its local directory.
  struct Copy {
    std::size_t file;
    int holder;
    int kind;  // 0 own copy, 1 partner copy, 2 durable copy (downloaded)
    std::string path;
    std::string refused;  // "" when verified
  };
  const auto copy_path = [&](std::size_t k, int kind) {
    return kind == 2 ? durable_dir + "/" + x.nodes[k].file : x.directory + (kind ? "/partner/" : "/") + x.nodes[k].file;
  };
  std::string found;
  if (nodes.is_leader())
    for (std::size_t k = 0; k < nf; ++k)
      for (int p = 0; p < (durable_dir.empty() ? 2 : 3); ++p)
        if (is_regular(copy_path(k, p))) found += std::to_string(k) + " " + std::to_string(p) + "\n";
  const std::vector<std::string> lists = world.all_gather(found);
  std::vector<Copy> copies;
  for (int j = 0; j < nodes.count(); ++j) {
    std::istringstream in(lists[nodes.leader(j)]);
    std::size_t k = 0;
    int p = 0;
    while (in >> k >> p)
      copies.push_back({k, j, p, copy_path(k, p), ""});
  }
  // Every node verifies the copies it holds (each on its node's ranks), then all learn the verdicts.
  std::string verdicts;
  for (std::size_t c = 0; c < copies.size(); ++c) {
    if (copies[c].holder != nodes.index()) continue;
    std::string why;
    try {
      const FileManifest m = verify_file(node, copies[c].path);
      if (manifest_id(m) != x.nodes[copies[c].file].manifest_id)
        why = "checkpoint '" + copies[c].path + "': sound, but not the file the index recorded (its manifest differs: a "
              "stale file of an earlier run or checkpoint of that name)";
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (nodes.is_leader()) {
      pack(verdicts, std::to_string(c));
      pack(verdicts, why);
    }
  }
  for (const std::string& v : world.all_gather(verdicts))
    for (std::size_t at = 0; at < v.size();) {
      const std::size_t c = std::stoull(unpack(v, at));
      copies[c].refused = unpack(v, at);
      if (copies[c].refused.empty()) copies[c].refused.clear();
    }
  // The copy each node file is read from: a verified own copy first, then a partner copy, then a durable one.
  const auto kind_name = [](int kind) { return kind == 0 ? "own copy" : kind == 1 ? "partner copy" : "durable copy"; };
  std::vector<std::string> hosts_here;
  for (const auto& h : nodes.hosts()) hosts_here.push_back(h);
  r.reader_node.assign(nf, -1);
  r.read_path.assign(nf, "");
  std::string missing;
  std::vector<std::string> verified(nf);
  for (std::size_t k = 0; k < nf; ++k) {
    for (int want = 0; want < 3 && r.reader_node[k] < 0; ++want)
      for (const auto& c : copies)
        if (c.file == k && c.kind == want && c.refused.empty() && r.reader_node[k] < 0) {
          r.reader_node[k] = c.holder;
          r.read_path[k] = c.path;
          r.sources.push_back(x.nodes[k].file + " (node " + std::to_string(k) + " of " + std::to_string(nf) + ", host " +
                              x.nodes[k].host + "): " + kind_name(c.kind) + " on host " +
                              nodes.hosts()[c.holder] + ", " + c.path);
        }
    if (r.reader_node[k] >= 0) {
      for (const auto& c : copies)  // the copies refused, where another one is read
        if (c.file == k && !c.refused.empty())
          r.skipped.push_back(x.nodes[k].file + ": " + kind_name(c.kind) + " on host " +
                              nodes.hosts()[c.holder] + " skipped: " + c.refused);
      continue;
    }
    std::string why;
    for (int p = 0; p < 2; ++p) {
      if (p == 1 && x.nodes[k].partner_host.empty()) {
        why += "; no partner copy was made (checkpoint.partner = false)";
        continue;
      }
      const std::string& where = p ? x.nodes[k].partner_host : x.nodes[k].host;
      std::string these;
      for (const auto& c : copies)
        if (c.file == k && c.kind == p) these += (these.empty() ? "" : "; ") + ("on host " + nodes.hosts()[c.holder] + ": refused: " + c.refused);
      if (these.empty())
        these = std::find(hosts_here.begin(), hosts_here.end(), where) == hosts_here.end()
                    ? "its host " + where + " is not a node of this run"
                    : "not found in " + x.directory + (p ? "/partner" : "") + " on host " + where;
      why += std::string("; ") + (p ? "partner copy (host " : "own copy (host ") + where + "): " + these;
    }
    for (const auto& c : copies)
      if (c.file == k && c.kind == 2) why += "; durable copy (on host " + nodes.hosts()[c.holder] + "): refused: " + c.refused;
    missing += "\n  node file " + x.nodes[k].file + " of host " + x.nodes[k].host + why;
  }
  if (!missing.empty())
    throw InputError(what + " (step " + std::to_string(x.step) + ", " + std::to_string(nf) +
                     " node files) is incomplete on the nodes of this run (" + std::to_string(nodes.count()) +
                     "): a node file has no sound copy:" + missing);
  // Open every node file on the node that reads it; its /meta/level must be the index's node file.
  r.readers.resize(nf);
  r.levels.resize(nf);
  std::string error, described;
  for (std::size_t k = 0; k < nf; ++k) {
    if (r.reader_node[k] != nodes.index()) continue;
    try {
      r.readers[k] = std::make_unique<CheckpointReader>(node, r.read_path[k]);
      const CheckpointMeta& m = r.readers[k]->meta();
      const NodeLevel l = parse_level(m.level);
      if (l.set != x.set || l.node != static_cast<int>(k) || l.nodes != static_cast<int>(nf) || m.step != x.step ||
          m.solver != x.solver)
        throw std::runtime_error("its /meta/level or step is not that of node " + std::to_string(k) + " of " + x.set);
      if (nodes.is_leader()) {
        pack(described, std::to_string(k));
        pack(described, pack_meta(m));
      }
    } catch (const std::exception& e) {
      error = r.read_path[k] + ": " + e.what();
      break;
    }
  }
  // A failure on one node (its ranks agree on it) is every rank's: each node reports it.
  world.agree<InputError>(error.empty(), what + ": " + error);
  std::vector<CheckpointMeta> metas(nf);
  for (const std::string& d : world.all_gather(described))
    for (std::size_t at = 0; at < d.size();) {
      const std::size_t k = std::stoull(unpack(d, at));
      const std::string m = unpack(d, at);
      std::size_t mat = 0;
      metas[k] = unpack_meta(m, mat);
    }
  std::string problem;
  int nranks = 0;
  for (std::size_t k = 0; k < nf && problem.empty(); ++k) {
    const CheckpointMeta& m = metas[k];
    nranks += m.nranks;
    if (m.deck != metas[0].deck || m.physics != metas[0].physics || m.time != metas[0].time || m.units != metas[0].units)
      problem = "node files " + x.nodes[0].file + " and " + x.nodes[k].file + " hold other decks, physics or times";
    try {
      r.levels[k] = parse_level(m.level);
    } catch (const std::exception& e) {
      problem = x.nodes[k].file + ": " + e.what();
    }
  }
  // The node files together hold every row of every array once.
  for (std::size_t k = 0; k < nf && problem.empty(); ++k)
    for (const auto& [name, rows] : r.levels[k].global_rows) {
      if (k == 0) r.global_rows[name] = rows;
      if (!r.global_rows.count(name) || r.global_rows[name] != rows) problem = "the node files disagree on the rows of '" + name + "'";
    }
  for (const auto& [name, rows] : r.global_rows) {
    if (!problem.empty()) break;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> blocks;
    for (const auto& l : r.levels) {
      if (l.global_rows.size() != r.global_rows.size()) problem = "the node files hold other arrays";
      auto it = l.blocks.find(name);
      if (it != l.blocks.end())
        for (const auto& b : it->second) blocks.emplace_back(b.global_first, b.rows);
    }
    std::sort(blocks.begin(), blocks.end());
    std::uint64_t next = 0;
    for (const auto& b : blocks) {
      if (b.first != next) {
        problem = "the node files do not hold the rows of '" + name + "' once each (" + (b.first < next ? "overlap" : "gap") +
                  " at row " + std::to_string(std::min(b.first, next)) + ")";
        break;
      }
      next += b.second;
    }
    if (problem.empty() && next != rows)
      problem = "the node files hold " + std::to_string(next) + " of the " + std::to_string(rows) + " rows of '" + name + "'";
  }
  if (!problem.empty()) throw InputError(what + ": " + problem);
  r.meta = metas[0];
  r.meta.level.clear();
  r.meta.nranks = nranks;
  for (const auto& f : x.nodes) r.bytes += f.size;
}

LevelSetReader::~LevelSetReader() = default;

const CheckpointMeta& LevelSetReader::meta() const { return m_impl->meta; }
const std::string& LevelSetReader::path() const { return m_impl->path; }
std::uint64_t LevelSetReader::bytes() const { return m_impl->bytes; }
const std::vector<std::string>& LevelSetReader::sources() const { return m_impl->sources; }
const std::vector<std::string>& LevelSetReader::skipped() const { return m_impl->skipped; }

SolverState LevelSetReader::read(const std::vector<StateArray>& expected) {
  Impl& r = *m_impl;
  const comm::Communicator& world = r.nodes.world();
  const std::string what = "checkpoint " + r.path + ": ";
  for (const auto& e : expected) {
    auto it = r.global_rows.find(e.name);
    if (it == r.global_rows.end()) throw InputError(what + "dataset '" + e.name + "' is missing");
    if (e.global_rows != 0 && e.global_rows != it->second)
      throw InputError(what + "dataset '" + e.name + "' has " + std::to_string(it->second) + " rows, expected " +
                       std::to_string(e.global_rows));
  }
  // Each node reads the node files it holds, its ranks an even share of each file's rows.
  const std::size_t nf = r.readers.size();
  std::vector<SolverState> parts(nf);
  std::string error, scalars;
  std::vector<StateArray> local_expected = expected;
  for (auto& e : local_expected) e.global_rows = 0;
  for (std::size_t k = 0; k < nf && error.empty(); ++k) {
    if (!r.readers[k]) continue;
    try {
      parts[k] = r.readers[k]->read(local_expected);
      if (r.nodes.is_leader()) {
        pack(scalars, std::to_string(k));
        pack(scalars, pack_scalars(parts[k]));
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  world.agree<InputError>(error.empty(), error);
  // The scalars of every node file are the same (the state's, not the node's).
  std::string first_scalars;
  for (const std::string& s : world.all_gather(scalars))
    for (std::size_t at = 0; at < s.size();) {
      unpack(s, at);
      const std::string sc = unpack(s, at);
      if (first_scalars.empty()) first_scalars = sc;
      if (sc != first_scalars) throw InputError(what + "the node files hold other scalars (/state)");
    }
  SolverState out;
  out.solver = r.meta.solver;
  unpack_scalars(first_scalars, out);
  // Every row to the rank that owns it in an even split of the run's rows (as CheckpointReader::read).
  const int P = world.size();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const StateArray& e = expected[i];
    StateArray a;
    a.name = e.name;
    a.inner = e.inner;
    a.is_integer = e.is_integer;
    a.global_rows = r.global_rows[e.name];
    block_of(a.global_rows, P, world.rank(), a.first_row, a.rows);
    const std::uint64_t row_bytes = 8 * a.row_size();
    if (a.is_integer) a.i64.resize(a.rows * a.row_size()); else a.f64.resize(a.rows * a.row_size());
    // Segments of rows this rank holds, each to the rank that owns it.
    std::vector<std::vector<std::uint64_t>> heads(P);  // (global first, rows) pairs per destination
    std::vector<std::vector<const char*>> from(P);
    for (std::size_t k = 0; k < nf; ++k) {
      if (!r.readers[k]) continue;
      const StateArray* got = parts[k].find(e.name);
      if (!got) continue;
      const char* data = got->is_integer ? reinterpret_cast<const char*>(got->i64.data()) : reinterpret_cast<const char*>(got->f64.data());
      const std::uint64_t a0 = got->first_row, a1 = got->first_row + got->rows;
      for (const LevelBlock& b : r.levels[k].blocks[e.name]) {
        const std::uint64_t lo = std::max(a0, b.node_first), hi = std::min(a1, b.node_first + b.rows);
        if (lo >= hi) continue;
        std::uint64_t g = b.global_first + (lo - b.node_first), left = hi - lo;
        const char* src = data + (lo - a0) * row_bytes;
        while (left > 0) {
          // The owner of global row g, and how many rows from g it owns.
          int owner = 0;
          std::uint64_t of = 0, oc = 0;
          const std::uint64_t base = a.global_rows / P, extra = a.global_rows % P;
          owner = static_cast<int>(g < extra * (base + 1) ? g / (base + 1) : extra + (g - extra * (base + 1)) / std::max<std::uint64_t>(base, 1));
          block_of(a.global_rows, P, owner, of, oc);
          const std::uint64_t n = std::min(left, of + oc - g);
          heads[owner].push_back(g);
          heads[owner].push_back(n);
          from[owner].push_back(src);
          g += n;
          left -= n;
          src += n * row_bytes;
        }
      }
    }
    std::vector<int> hcount(P), hdispl(P), dcount(P), ddispl(P), rhcount(P), rhdispl(P), rdcount(P), rdispl(P);
    std::string send;
    std::vector<std::uint64_t> hsend;
    std::uint64_t total_bytes = 0;
    for (int q = 0; q < P; ++q) {
      hdispl[q] = static_cast<int>(hsend.size());
      ddispl[q] = static_cast<int>(send.size());
      for (std::size_t s = 0; s < from[q].size(); ++s) {
        hsend.push_back(heads[q][2 * s]);
        hsend.push_back(heads[q][2 * s + 1]);
        const std::uint64_t nbytes = heads[q][2 * s + 1] * row_bytes;
        total_bytes += nbytes;
        if (total_bytes <= static_cast<std::uint64_t>(INT_MAX)) send.append(from[q][s], nbytes);
      }
      hcount[q] = static_cast<int>(hsend.size()) - hdispl[q];
      dcount[q] = static_cast<int>(send.size()) - ddispl[q];
    }
    world.agree<InputError>(total_bytes <= static_cast<std::uint64_t>(INT_MAX),
                            what + "more than 2 GiB of '" + e.name + "' on one rank: read it on more ranks");
    SPOTRUN_MPI_CHECK(MPI_Alltoall(hcount.data(), 1, MPI_INT, rhcount.data(), 1, MPI_INT, world.mpi()));
    SPOTRUN_MPI_CHECK(MPI_Alltoall(dcount.data(), 1, MPI_INT, rdcount.data(), 1, MPI_INT, world.mpi()));
    std::uint64_t th = 0, td = 0;
    for (int q = 0; q < P; ++q) {
      rhdispl[q] = static_cast<int>(th);
      rdispl[q] = static_cast<int>(td);
      th += rhcount[q];
      td += rdcount[q];
    }
    std::vector<std::uint64_t> hrecv(th);
    std::string recv(td, '\0');
    SPOTRUN_MPI_CHECK(MPI_Alltoallv(hsend.data(), hcount.data(), hdispl.data(), MPI_UINT64_T, hrecv.data(), rhcount.data(),
                                    rhdispl.data(), MPI_UINT64_T, world.mpi()));
    SPOTRUN_MPI_CHECK(MPI_Alltoallv(send.data(), dcount.data(), ddispl.data(), MPI_BYTE, recv.data(), rdcount.data(),
                                    rdispl.data(), MPI_BYTE, world.mpi()));
    char* dst = a.is_integer ? reinterpret_cast<char*>(a.i64.data()) : reinterpret_cast<char*>(a.f64.data());
    std::uint64_t at = 0, placed = 0;
    for (std::size_t s = 0; s + 1 < hrecv.size(); s += 2) {
      const std::uint64_t g = hrecv[s], n = hrecv[s + 1];
      std::memcpy(dst + (g - a.first_row) * row_bytes, recv.data() + at, n * row_bytes);
      at += n * row_bytes;
      placed += n;
    }
    world.agree<InputError>(placed == a.rows, what + "rank " + std::to_string(world.rank()) + " received " +
                                                  std::to_string(placed) + " of its " + std::to_string(a.rows) +
                                                  " rows of '" + e.name + "'");
    out.arrays.push_back(std::move(a));
  }
  return out;
}

VerifyReport LevelSetReader::verify() {
  Impl& r = *m_impl;
  const comm::Communicator& world = r.nodes.world();
  VerifyReport report;
  std::string mine;
  for (std::size_t k = 0; k < r.readers.size(); ++k) {
    if (!r.readers[k]) continue;
    const VerifyReport v = r.readers[k]->verify();
    if (r.nodes.is_leader()) {
      std::string lines;
      for (const auto& l : v.lines) lines += r.index.nodes[k].file + ": " + l + "\n";
      pack(mine, std::to_string(k));
      pack(mine, v.ok ? "1" : "0");
      pack(mine, lines);
    }
  }
  std::vector<std::string> per_file(r.readers.size());
  for (const std::string& s : world.all_gather(mine))
    for (std::size_t at = 0; at < s.size();) {
      const std::size_t k = std::stoull(unpack(s, at));
      report.ok = unpack(s, at) == "1" && report.ok;
      per_file[k] = unpack(s, at);
    }
  report.lines.push_back("index: set " + r.index.set + ", step " + std::to_string(r.index.step) + ", " +
                         std::to_string(r.index.nodes.size()) + " node file(s) in " + r.index.directory +
                         (r.index.partner ? ", with partner copies" : ", without partner copies"));
  for (const auto& s : r.sources) report.lines.push_back("read: " + s);
  for (const auto& s : r.skipped) report.lines.push_back("skipped: " + s);
  for (const auto& text : per_file) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) report.lines.push_back(line);
  }
  return report;
}

}  // namespace spotrun::io
