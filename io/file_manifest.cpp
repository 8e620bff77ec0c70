// The whole-file manifest of a checkpoint (see file_manifest.hpp and docs/checkpoint-format.md).
#include "file_manifest.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "comm/errors.hpp"
#include "solver_state.hpp"

namespace spotrun::io {
namespace {

constexpr const char* k_magic = "spotrun-checkpoint-manifest 1";
constexpr const char* k_hash_name = "xxh3-64";
constexpr char k_hdf5_signature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
constexpr std::uint64_t k_small_userblock = 4096;
constexpr std::uint64_t k_large_userblock = std::uint64_t(1) << 20;
constexpr std::uint64_t k_large_file = std::uint64_t(64) << 20;
constexpr std::uint64_t k_min_block = std::uint64_t(1) << 20;
constexpr std::uint64_t k_max_block = std::uint64_t(1) << 40;
constexpr std::uint64_t k_chunk = std::uint64_t(4) << 20;  // bytes read per pread while hashing
constexpr std::uint64_t k_header_reserve = 320;            // the manifest lines other than the hashes
constexpr std::uint64_t k_hash_line = 17;                  // 16 hex digits and a newline

std::string hex16(std::uint64_t v) {
  char t[20];
  std::snprintf(t, sizeof t, "%016" PRIx64, v);
  return t;
}

bool is_power_of_two(std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

bool solver_name_ok(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.'))
      return false;
  return true;
}

// A file descriptor closed on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : m_fd(fd) {}
  ~Fd() {
    if (m_fd >= 0) ::close(m_fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return m_fd; }

 private:
  int m_fd;
};

// Opens a file for reading without blocking on a FIFO or device, and checks that it is a regular file.
// Returns the descriptor and the size.
int open_regular(const std::string& path, std::uint64_t& size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    throw std::runtime_error(err == ENOENT ? std::string("no such file") : "cannot open it: " + std::string(std::strerror(err)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::runtime_error("cannot stat it: " + std::string(std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error(S_ISDIR(st.st_mode) ? "a directory, not a checkpoint file" : "not a regular file");
  }
  size = static_cast<std::uint64_t>(st.st_size);
  return fd;
}

// Reads exactly n bytes at offset; throws when the file ends early or a read fails.
void read_exactly(int fd, void* out, std::uint64_t n, std::uint64_t offset) {
  auto* p = static_cast<unsigned char*>(out);
  std::uint64_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, p + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw std::runtime_error("read failed: " + std::string(std::strerror(errno)));
    if (r == 0) throw std::runtime_error("the file ended at byte " + std::to_string(offset + got) + " while being read");
    got += static_cast<std::uint64_t>(r);
  }
}

// XXH3-64 (seed = block index) of bytes [begin, end) of the file.
std::uint64_t hash_range(int fd, std::uint64_t begin, std::uint64_t end, std::uint64_t seed, std::vector<unsigned char>& buffer) {
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_64bits_reset_withSeed(&state, seed);
  for (std::uint64_t at = begin; at < end;) {
    const std::uint64_t n = std::min<std::uint64_t>(k_chunk, end - at);
    if (buffer.size() < n) buffer.resize(n);
    read_exactly(fd, buffer.data(), n, at);
    XXH3_64bits_update(&state, buffer.data(), n);
    at += n;
  }
  return XXH3_64bits_digest(&state);
}

// The first bytes of the file (up to the largest user block), on the reading rank.
std::string read_head(int fd, std::uint64_t size) {
  std::string head(static_cast<std::size_t>(std::min(size, k_large_userblock)), '\0');
  read_exactly(fd, head.data(), head.size(), 0);
  return head;
}

// The manifest text of a file's first bytes, decoded; explains files that have none.
FileManifest manifest_of_head(const std::string& head, std::uint64_t size) {
  if (size == 0) throw std::runtime_error("the file is empty");
  if (head.size() >= sizeof k_hdf5_signature && std::memcmp(head.data(), k_hdf5_signature, sizeof k_hdf5_signature) == 0)
    throw std::runtime_error(
        "an HDF5 file without a spotrun manifest: checkpoint format 1 (spotrun 0.1) or not a spotrun checkpoint; this "
        "spotrun reads format 2, whose every byte is verified before it is parsed");
  const std::string magic = std::string(k_magic) + "\n";
  if (head.compare(0, magic.size(), magic) != 0)
    throw std::runtime_error("no spotrun checkpoint manifest at the start of the file: damaged, or not a spotrun checkpoint");
  const std::size_t end = head.find('\0');
  if (end == std::string::npos) throw std::runtime_error("the checkpoint manifest has no end: the file is damaged");
  FileManifest m;
  try {
    m = FileManifest::decode(head.substr(0, end));
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("the checkpoint manifest is damaged: ") + e.what());
  }
  if (m.file_size != size)
    throw std::runtime_error("the file has " + std::to_string(size) + " bytes, its manifest says " +
                             std::to_string(m.file_size) + ": the file is " + (size < m.file_size ? "truncated" : "extended") +
                             " or damaged");
  return m;
}

// Reads a whole line "key value" of the manifest; returns the value.
class LineReader {
 public:
  explicit LineReader(const std::string& text) : m_text(text) {}
  std::string next() {
    const std::size_t nl = m_text.find('\n', m_pos);
    if (nl == std::string::npos) throw std::runtime_error("a line is cut short");
    std::string line = m_text.substr(m_pos, nl - m_pos);
    m_pos = nl + 1;
    return line;
  }
  std::string value(const char* key) {
    const std::string line = next();
    const std::string prefix = std::string(key) + " ";
    if (line.compare(0, prefix.size(), prefix) != 0) throw std::runtime_error(std::string("expected the line '") + key + " ...'");
    return line.substr(prefix.size());
  }
  std::uint64_t number(const char* key, int base = 10) {
    const std::string v = value(key);
    std::uint64_t out = 0;
    const auto r = std::from_chars(v.data(), v.data() + v.size(), out, base);
    if (v.empty() || r.ec != std::errc() || r.ptr != v.data() + v.size() || (base == 16 && v.size() != 16))
      throw std::runtime_error(std::string("'") + key + "' is not a number");
    return out;
  }
  std::uint64_t hash() {
    const std::string v = next();
    std::uint64_t out = 0;
    const auto r = std::from_chars(v.data(), v.data() + v.size(), out, 16);
    if (v.size() != 16 || r.ec != std::errc() || r.ptr != v.data() + v.size()) throw std::runtime_error("a block hash is malformed");
    return out;
  }
  std::size_t position() const { return m_pos; }

 private:
  const std::string& m_text;
  std::size_t m_pos = 0;
};

}  // namespace

std::uint64_t FileManifest::block_count() const {
  if (block_size == 0 || file_size <= userblock) return 0;
  return (file_size - userblock + block_size - 1) / block_size;
}

std::string FileManifest::encode() const {
  if (!solver_name_ok(solver)) throw std::runtime_error("solver name '" + solver + "' cannot go into a checkpoint manifest");
  std::string t = std::string(k_magic) + "\n";
  t += "userblock " + std::to_string(userblock) + "\n";
  t += "file_size " + std::to_string(file_size) + "\n";
  t += "block_size " + std::to_string(block_size) + "\n";
  t += "solver " + solver + "\n";
  t += "step " + std::to_string(step) + "\n";
  t += std::string("hash ") + k_hash_name + "\n";
  t += "blocks " + std::to_string(hashes.size()) + "\n";
  for (auto h : hashes) t += hex16(h) + "\n";
  t += "end " + hex16(XXH3_64bits(t.data(), t.size())) + "\n";
  return t;
}

FileManifest FileManifest::decode(const std::string& text) {
  // The last line seals everything before it: check it first, so that no field of a damaged manifest
  // is trusted.
  const std::size_t end_line = text.rfind("end ");
  if (end_line == std::string::npos || (end_line > 0 && text[end_line - 1] != '\n') || text.size() != end_line + 21 ||
      text.back() != '\n')
    throw std::runtime_error("its last line is not 'end <hash>'");
  std::uint64_t sealed = 0;
  const char* h = text.data() + end_line + 4;
  const auto r = std::from_chars(h, h + 16, sealed, 16);
  if (r.ec != std::errc() || r.ptr != h + 16) throw std::runtime_error("its 'end' hash is malformed");
  if (XXH3_64bits(text.data(), end_line) != sealed) throw std::runtime_error("its text does not match its own hash");

  LineReader in(text);
  FileManifest m;
  if (in.next() != k_magic) throw std::runtime_error("unknown manifest version");
  m.userblock = in.number("userblock");
  m.file_size = in.number("file_size");
  m.block_size = in.number("block_size");
  m.solver = in.value("solver");
  const std::string step = in.value("step");
  const auto rs = std::from_chars(step.data(), step.data() + step.size(), m.step);
  if (step.empty() || rs.ec != std::errc() || rs.ptr != step.data() + step.size() || m.step < 0)
    throw std::runtime_error("'step' is not a step number");
  if (in.value("hash") != k_hash_name) throw std::runtime_error("unknown hash algorithm");
  const std::uint64_t blocks = in.number("blocks");
  if (!is_power_of_two(m.userblock) || m.userblock < 512 || m.userblock > k_large_userblock)
    throw std::runtime_error("user block of " + std::to_string(m.userblock) + " bytes is not a power of two in 512..1048576");
  if (text.size() >= m.userblock) throw std::runtime_error("it is longer than its user block");
  if (!is_power_of_two(m.block_size) || m.block_size < 4096 || m.block_size > k_max_block)
    throw std::runtime_error("block size " + std::to_string(m.block_size) + " is not a power of two in 4096..2^40");
  if (m.file_size <= m.userblock) throw std::runtime_error("file size " + std::to_string(m.file_size) + " leaves no room for data");
  if (!solver_name_ok(m.solver)) throw std::runtime_error("the solver name is malformed");
  if (blocks != m.block_count()) throw std::runtime_error("it lists " + std::to_string(blocks) + " blocks, the size needs " +
                                                          std::to_string(m.block_count()));
  m.hashes.resize(blocks);
  for (auto& v : m.hashes) v = in.hash();
  if (in.position() != end_line) throw std::runtime_error("unexpected lines before 'end'");
  // Exactly the text this manifest encodes to (lowercase hex, no leading zeros, ...): a changed byte can
  // never leave an equivalent manifest behind.
  if (m.encode() != text) throw std::runtime_error("it is not in its canonical form");
  return m;
}

std::uint64_t manifest_userblock_bytes(std::uint64_t expected_bytes) {
  return expected_bytes >= k_large_file ? k_large_userblock : k_small_userblock;
}

void seal_file(const comm::Communicator& comm, const std::string& path, std::uint64_t userblock, const std::string& solver,
               std::int64_t step) {
  FileManifest m;
  m.userblock = userblock;
  m.solver = solver;
  m.step = step;
  std::string error;
  std::uint64_t size = 0;
  int fd = -1;
  try {
    fd = open_regular(path, size);
  } catch (const std::exception& e) {
    error = "cannot open '" + path + "' to seal it: " + e.what();
  }
  Fd closer(fd);
  comm.agree<std::runtime_error>(error.empty(), error);
  SPOTRUN_MPI_CHECK(MPI_Bcast(&size, 1, MPI_UINT64_T, 0, comm.mpi()));
  m.file_size = size;
  const std::uint64_t capacity = userblock > k_header_reserve ? (userblock - k_header_reserve) / k_hash_line : 0;
  m.block_size = k_min_block;
  while (m.block_count() > capacity && m.block_size < k_max_block) m.block_size *= 2;
  std::vector<std::uint64_t> mine(m.block_count(), 0);
  try {
    if (size <= userblock) throw std::runtime_error("'" + path + "' has no data after its user block");
    std::vector<unsigned char> buffer;
    for (std::uint64_t b = comm.rank(); b < mine.size(); b += comm.size()) {
      const std::uint64_t begin = userblock + b * m.block_size;
      mine[b] = hash_range(fd, begin, std::min(size, begin + m.block_size), b, buffer);
    }
  } catch (const std::exception& e) {
    error = "hashing '" + path + "' failed: " + e.what();
  }
  comm.agree<std::runtime_error>(error.empty(), error);
  m.hashes.assign(mine.size(), 0);
  if (!mine.empty())
    SPOTRUN_MPI_CHECK(MPI_Reduce(mine.data(), m.hashes.data(), static_cast<int>(mine.size()), MPI_UINT64_T, MPI_SUM, 0,
                                 comm.mpi()));
  if (comm.is_root()) {
    try {
      std::string block = m.encode();
      if (block.size() >= userblock) throw std::runtime_error("the manifest does not fit in the user block");
      block.resize(userblock, '\0');
      const int wfd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
      if (wfd < 0) throw std::runtime_error("cannot open '" + path + "' to write its manifest: " + std::strerror(errno));
      Fd wcloser(wfd);
      for (std::uint64_t done = 0; done < block.size();) {
        const ssize_t n = ::pwrite(wfd, block.data() + done, block.size() - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw std::runtime_error("writing the manifest of '" + path + "' failed: " + std::strerror(errno));
        done += static_cast<std::uint64_t>(n);
      }
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  comm.agree<std::runtime_error>(error.empty(), error);
}

namespace {

// Rank 0 reads the manifest at the start of `path` and, when asked, checks that the rest of the user
// block is zero; every rank gets the manifest, or InputError on every rank.
FileManifest agreed_manifest(const comm::Communicator& comm, const std::string& path, bool check_padding) {
  std::string error, text;
  if (comm.is_root()) {
    try {
      std::uint64_t size = 0;
      Fd fd(open_regular(path, size));
      const std::string head = read_head(fd.get(), size);
      const FileManifest m = manifest_of_head(head, size);
      const std::size_t end = head.find('\0');
      // Every byte of the user block after the manifest is zero (nothing else lives there).
      const auto first = head.begin() + static_cast<std::ptrdiff_t>(end);
      const auto last = head.begin() + static_cast<std::ptrdiff_t>(m.userblock);
      const auto nonzero = check_padding ? std::find_if(first, last, [](char c) { return c != 0; }) : last;
      if (nonzero != last)
        throw std::runtime_error("byte " + std::to_string(nonzero - head.begin()) +
                                 " of the user block after the manifest is not zero: the file is damaged");
      text = head.substr(0, end);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  comm.agree<InputError>(error.empty(), "checkpoint '" + path + "': " + error);
  return FileManifest::decode(comm.broadcast(text));  // the same text on every rank: the same result
}

}  // namespace

FileManifest verify_file(const comm::Communicator& comm, const std::string& path) {
  const FileManifest m = agreed_manifest(comm, path, true);
  std::string error;
  try {
    std::uint64_t size = 0;
    Fd fd(open_regular(path, size));
    if (size != m.file_size)
      throw std::runtime_error("the file has " + std::to_string(size) + " bytes on rank " + std::to_string(comm.rank()) +
                               ", its manifest says " + std::to_string(m.file_size));
    // Each rank a contiguous run of blocks: sequential reads, which the kernel reads ahead.
    std::uint64_t first = 0, count = 0;
    block_of(m.hashes.size(), comm.size(), comm.rank(), first, count);
    std::vector<unsigned char> buffer;
    for (std::uint64_t b = first; b < first + count; ++b) {
      const std::uint64_t begin = m.userblock + b * m.block_size;
      const std::uint64_t end = std::min(m.file_size, begin + m.block_size);
      if (hash_range(fd.get(), begin, end, b, buffer) != m.hashes[b])
        throw std::runtime_error("bytes " + std::to_string(begin) + ".." + std::to_string(end - 1) + " (block " +
                                 std::to_string(b) + " of " + std::to_string(m.hashes.size()) +
                                 ") do not match the manifest: the file is damaged");
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  comm.agree<InputError>(error.empty(), "checkpoint '" + path + "': " + error);
  return m;
}

FileManifest peek_manifest(const comm::Communicator& comm, const std::string& path) {
  return agreed_manifest(comm, path, false);
}

std::string manifest_id(const FileManifest& manifest) {
  const std::string text = manifest.encode();
  return hex16(XXH3_64bits(text.data(), text.size()));
}

struct BlockStreamCheck::State {
  XXH3_state_t hash;
  std::uint64_t block = 0;  // the block being hashed
  bool open = false;
};

BlockStreamCheck::BlockStreamCheck(const FileManifest& manifest)
    : m_manifest(manifest), m_state(std::make_unique<State>()) {
  XXH3_INITSTATE(&m_state->hash);
}

BlockStreamCheck::~BlockStreamCheck() = default;

std::string BlockStreamCheck::feed(const char* data, std::uint64_t at, std::uint64_t n) {
  const FileManifest& m = m_manifest;
  State& st = *m_state;
  if (m.block_size == 0) return "";
  const std::uint64_t end = at + n;
  for (std::uint64_t pos = std::max(at, m.userblock); pos < end;) {
    const std::uint64_t b = (pos - m.userblock) / m.block_size;
    const std::uint64_t b_end = std::min(m.file_size, m.userblock + (b + 1) * m.block_size);
    if (!st.open || b != st.block) {
      XXH3_64bits_reset_withSeed(&st.hash, b);  // seed: the block's index, as hash_range's
      st.block = b;
      st.open = true;
    }
    const std::uint64_t upto = std::min(end, b_end);
    XXH3_64bits_update(&st.hash, data + (pos - at), upto - pos);
    pos = upto;
    if (pos == b_end) {
      st.open = false;
      if (b >= m.hashes.size() || XXH3_64bits_digest(&st.hash) != m.hashes[b])
        return "bytes " + std::to_string(m.userblock + b * m.block_size) + ".." + std::to_string(b_end - 1) + " (block " +
               std::to_string(b) + ")";
    }
  }
  return "";
}

}  // namespace spotrun::io
