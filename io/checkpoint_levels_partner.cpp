// The partner level of a level set (io/checkpoint_levels.hpp): the leader of node k sends its node file to the
// leader of node k+1 (mod the node count) and keeps node k-1's as a partner copy, every block checked against
// the sent manifest as it arrives (io/file_manifest.hpp's BlockStreamCheck: the checkpoint's own hashing).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include "comm/errors.hpp"
#include "file_manifest.hpp"
#include "impl/checkpoint_levels_impl.hpp"

namespace spotrun::io::impl {
namespace {

constexpr std::uint64_t k_chunk = std::uint64_t(64) << 20;  // bytes per message of a partner copy
constexpr int k_tag_header = 7401, k_tag_data = 7402;
constexpr std::uint64_t k_unreadable = ~std::uint64_t(0);  // the size a sender that cannot read its file sends

// One leader's exchange: every leader goes through every message whatever fails, so that none waits for
// another; the first failure is kept.
struct PartnerExchange {
  const NodeGroups& nodes;
  const LevelFile& own;
  const std::string& own_path;
  MPI_Comm w;
  int to, from;
  int in_fd = -1, out_fd = -1;
  std::string error, send_error;
  // What the previous node's leader announced.
  std::string name, id;
  std::uint64_t recv_size = 0;
  FileManifest manifest;

  void fail(const std::string& e) {
    const int n = nodes.count(), k = nodes.index();
    if (error.empty())
      error = "partner copy of node file '" + own.file + "' (from host " + nodes.hosts()[(k + n - 1) % n] + " to host " +
              nodes.host() + "): " + e;
  }
  void swap_headers(const std::string& own_manifest);
  void read_chunk(std::vector<char>& sbuf, std::uint64_t sent, std::uint64_t ns);
  void write_chunk(const std::vector<char>& rbuf, std::uint64_t got, std::uint64_t nr, const std::string& tmp);
  void stream(std::uint64_t my_send, const std::string& tmp);
  void commit(const std::string& tmp, const std::string& final_path);
};

// Header: the file's name, its manifest id and size (k_unreadable: nothing follows, the sender failed), then
// the manifest's text, so that the receiver hashes the blocks as they arrive.
void PartnerExchange::swap_headers(const std::string& own_manifest) {
  const std::uint64_t send_size = in_fd < 0 ? k_unreadable : own.size;
  std::string header = own.file + "\n" + own.manifest_id + "\n" + std::to_string(send_size) + "\n" + own_manifest;
  std::uint64_t header_size = header.size(), recv_header_size = 0;
  SPOTRUN_MPI_CHECK(MPI_Sendrecv(&header_size, 1, MPI_UINT64_T, to, k_tag_header, &recv_header_size, 1, MPI_UINT64_T, from,
                                 k_tag_header, w, MPI_STATUS_IGNORE));
  std::string recv_header(recv_header_size, '\0');
  SPOTRUN_MPI_CHECK(MPI_Sendrecv(header.data(), static_cast<int>(header_size), MPI_CHAR, to, k_tag_header,
                                 recv_header.data(), static_cast<int>(recv_header_size), MPI_CHAR, from, k_tag_header, w,
                                 MPI_STATUS_IGNORE));
  std::istringstream hin(recv_header);
  std::string size_text;
  std::getline(hin, name);
  std::getline(hin, id);
  std::getline(hin, size_text);
  try {
    recv_size = std::stoull(size_text);
  } catch (const std::exception&) {
    recv_size = k_unreadable;
  }
  // The sent file's manifest: every block is hashed as it arrives (no second read of the copy).
  std::string text((std::istreambuf_iterator<char>(hin)), std::istreambuf_iterator<char>());
  try {
    manifest = FileManifest::decode(text);
    if (manifest_id(manifest) != id) throw std::runtime_error("its id is not the one announced");
    if (recv_size != k_unreadable && manifest.file_size != recv_size) throw std::runtime_error("its size is not the file's");
  } catch (const std::exception& e) {
    fail(std::string("the manifest sent is unusable: ") + e.what());
  }
}

// Bytes [sent, sent + ns) of the own file into sbuf; a failed read sends zeros (the receiver's check refuses them).
void PartnerExchange::read_chunk(std::vector<char>& sbuf, std::uint64_t sent, std::uint64_t ns) {
  for (std::uint64_t done = 0; done < ns;) {
    const ssize_t r = ::pread(in_fd, sbuf.data() + done, ns - done, static_cast<off_t>(sent + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (send_error.empty()) send_error = "reading '" + own_path + "' failed: " + (r < 0 ? errno_text() : "it ended early");
      std::fill(sbuf.begin() + static_cast<std::ptrdiff_t>(done), sbuf.begin() + static_cast<std::ptrdiff_t>(ns), 0);
      break;
    }
    done += static_cast<std::uint64_t>(r);
  }
}

void PartnerExchange::write_chunk(const std::vector<char>& rbuf, std::uint64_t got, std::uint64_t nr, const std::string& tmp) {
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
}

// Sends the own file and receives the partner's in chunks of k_chunk bytes, each checked as it arrives.
void PartnerExchange::stream(std::uint64_t my_send, const std::string& tmp) {
  BlockStreamCheck check(manifest);
  std::vector<char> sbuf(std::min(k_chunk, std::max<std::uint64_t>(my_send, 1))),
      rbuf(std::min(k_chunk, std::max<std::uint64_t>(recv_size, 1)));
  for (std::uint64_t sent = 0, got = 0; sent < my_send || got < recv_size;) {
    const std::uint64_t ns = std::min(k_chunk, my_send - sent), nr = std::min(k_chunk, recv_size - got);
    if (ns > 0) read_chunk(sbuf, sent, ns);
    MPI_Request req[2];
    int nreq = 0;
    if (nr > 0) SPOTRUN_MPI_CHECK(MPI_Irecv(rbuf.data(), static_cast<int>(nr), MPI_BYTE, from, k_tag_data, w, &req[nreq++]));
    if (ns > 0) SPOTRUN_MPI_CHECK(MPI_Isend(sbuf.data(), static_cast<int>(ns), MPI_BYTE, to, k_tag_data, w, &req[nreq++]));
    SPOTRUN_MPI_CHECK(MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE));
    if (error.empty()) {
      const std::string bad = check.feed(rbuf.data(), got, nr);
      if (!bad.empty()) fail(bad + " do not match the manifest as they arrive");
    }
    write_chunk(rbuf, got, nr, tmp);
    sent += ns;
    got += nr;
  }
}

// Every block was hashed as it arrived; the copy's own manifest (its first bytes, from the page cache) must be
// the one sent. No fsync: a partner copy guards against losing the other node, and a crash of this node loses
// its page cache and the copy with it (docs/checkpoints.md).
void PartnerExchange::commit(const std::string& tmp, const std::string& final_path) {
  try {
    comm::Communicator self(MPI_COMM_SELF);
    if (manifest_id(peek_manifest(self, tmp)) != id) throw std::runtime_error("the copy's manifest is not the sent file's");
    if (::rename(tmp.c_str(), final_path.c_str()) != 0)
      throw std::runtime_error("cannot rename '" + tmp + "' to '" + final_path + "': " + errno_text());
  } catch (const std::exception& e) {
    fail(e.what());
  }
}

}  // namespace

std::string exchange_with_partner(const NodeGroups& nodes, const std::string& directory, const LevelFile& own,
                                  const std::string& own_path, const std::string& own_manifest) {
  const int n = nodes.count(), k = nodes.index();
  PartnerExchange x{nodes, own, own_path, nodes.world().mpi(), nodes.leader((k + 1) % n), nodes.leader((k + n - 1) % n)};
  x.in_fd = ::open(own_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (x.in_fd < 0) x.send_error = "cannot open '" + own_path + "' to send it: " + errno_text();
  x.swap_headers(own_manifest);
  if (x.recv_size == k_unreadable) {
    x.fail("the sending node could not read its file");
    x.recv_size = 0;
  }
  if (x.name.empty() || x.name.find('/') != std::string::npos || x.name[0] == '.') x.fail("a file name '" + x.name + "' was sent");
  const std::string final_path = directory + "/partner/" + x.name, tmp = final_path + ".tmp";
  if (x.error.empty()) {
    x.out_fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (x.out_fd < 0) x.fail("cannot create '" + tmp + "': " + errno_text());
  }
  x.stream(x.in_fd < 0 ? 0 : own.size, tmp);
  if (x.in_fd >= 0) ::close(x.in_fd);
  if (x.out_fd >= 0) ::close(x.out_fd);
  if (!x.send_error.empty() && x.error.empty()) x.error = x.send_error;
  if (x.error.empty()) x.commit(tmp, final_path);
  if (!x.error.empty()) ::unlink(tmp.c_str());
  return x.error;
}

}  // namespace spotrun::io::impl
