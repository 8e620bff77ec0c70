// Multilevel checkpoints (io/checkpoint_levels.hpp): the nodes of a run, the directory of its node files, and
// the local level -- every node writes the rows of its ranks into one node file -- with the partner copy
// (checkpoint_levels_partner.cpp) after it. The index: checkpoint_levels_index.cpp; a set written in the
// background: checkpoint_levels_background.cpp; reading a set: checkpoint_levels_read.cpp.
#include "checkpoint_levels.hpp"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <set>
#include <sstream>
#include <stdexcept>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "comm/errors.hpp"
#include "file_manifest.hpp"
#include "impl/checkpoint_levels_impl.hpp"
#include "run_directory.hpp"

namespace spotrun::io {

using namespace impl;

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

}  // namespace spotrun::io
