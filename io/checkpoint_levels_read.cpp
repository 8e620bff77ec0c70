// Reading a level set (io/checkpoint_levels.hpp, LevelSetReader): every copy of every node file the nodes of
// this run hold is found and verified, one sound copy of each chosen (own, then partner, then durable), the
// node files opened where they lie, and their rows sent to the ranks that own them in an even split.
#include <algorithm>
#include <climits>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "checkpoint_levels.hpp"
#include "comm/errors.hpp"
#include "file_manifest.hpp"
#include "impl/checkpoint_levels_impl.hpp"

namespace spotrun::io {

using namespace impl;

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

namespace {

// A copy of a node file on a node of this run.
struct Copy {
  std::size_t file;
  int holder;
  int kind;  // 0 own copy, 1 partner copy, 2 durable copy (downloaded)
  std::string path;
  std::string refused;  // "" when verified
};

const char* kind_name(int kind) { return kind == 0 ? "own copy" : kind == 1 ? "partner copy" : "durable copy"; }

// Every copy of every node file (each node's leader looks in its local directory), each verified on the node
// that holds it against its manifest and the index; every rank learns every verdict (collective).
std::vector<Copy> find_copies(const NodeGroups& nodes, const LevelIndex& x, const std::string& durable_dir) {
  const comm::Communicator& world = nodes.world();
  const std::size_t nf = x.nodes.size();
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
    while (in >> k >> p) copies.push_back({k, j, p, copy_path(k, p), ""});
  }
  std::string verdicts;
  for (std::size_t c = 0; c < copies.size(); ++c) {
    if (copies[c].holder != nodes.index()) continue;
    std::string why;
    try {
      const FileManifest m = verify_file(nodes.node(), copies[c].path);
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
    }
  return copies;
}

// Why node file k has no sound copy: each place a copy could be, and what was found there.
std::string why_missing(const NodeGroups& nodes, const LevelIndex& x, const std::vector<Copy>& copies, std::size_t k) {
  const std::vector<std::string>& hosts_here = nodes.hosts();
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
  return why;
}

// The copy each node file is read from: a verified own copy first, then a partner copy, then a durable one.
// InputError on every rank (they all know every verdict) when a node file has no sound copy.
void choose_copies(LevelSetReader::Impl& r, const std::vector<Copy>& copies, const std::string& what) {
  const NodeGroups& nodes = r.nodes;
  const LevelIndex& x = r.index;
  const std::size_t nf = x.nodes.size();
  r.reader_node.assign(nf, -1);
  r.read_path.assign(nf, "");
  std::string missing;
  for (std::size_t k = 0; k < nf; ++k) {
    for (int want = 0; want < 3 && r.reader_node[k] < 0; ++want)
      for (const auto& c : copies)
        if (c.file == k && c.kind == want && c.refused.empty() && r.reader_node[k] < 0) {
          r.reader_node[k] = c.holder;
          r.read_path[k] = c.path;
          r.sources.push_back(x.nodes[k].file + " (node " + std::to_string(k) + " of " + std::to_string(nf) + ", host " +
                              x.nodes[k].host + "): " + kind_name(c.kind) + " on host " + nodes.hosts()[c.holder] + ", " +
                              c.path);
        }
    if (r.reader_node[k] >= 0) {
      for (const auto& c : copies)  // the copies refused, where another one is read
        if (c.file == k && !c.refused.empty())
          r.skipped.push_back(x.nodes[k].file + ": " + kind_name(c.kind) + " on host " + nodes.hosts()[c.holder] +
                              " skipped: " + c.refused);
      continue;
    }
    missing += "\n  node file " + x.nodes[k].file + " of host " + x.nodes[k].host + why_missing(nodes, x, copies, k);
  }
  if (!missing.empty())
    throw InputError(what + " (step " + std::to_string(x.step) + ", " + std::to_string(nf) +
                     " node files) is incomplete on the nodes of this run (" + std::to_string(nodes.count()) +
                     "): a node file has no sound copy:" + missing);
}

// Opens every node file on the node that reads it (its /meta/level must be the index's node file); returns the
// metadata of every node file, on every rank (collective; InputError on every rank).
std::vector<CheckpointMeta> open_node_files(LevelSetReader::Impl& r, const std::string& what) {
  const NodeGroups& nodes = r.nodes;
  const LevelIndex& x = r.index;
  const std::size_t nf = x.nodes.size();
  r.readers.resize(nf);
  r.levels.resize(nf);
  std::string error, described;
  for (std::size_t k = 0; k < nf; ++k) {
    if (r.reader_node[k] != nodes.index()) continue;
    try {
      r.readers[k] = std::make_unique<CheckpointReader>(nodes.node(), r.read_path[k]);
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
  nodes.world().agree<InputError>(error.empty(), what + ": " + error);
  std::vector<CheckpointMeta> metas(nf);
  for (const std::string& d : nodes.world().all_gather(described))
    for (std::size_t at = 0; at < d.size();) {
      const std::size_t k = std::stoull(unpack(d, at));
      const std::string m = unpack(d, at);
      std::size_t mat = 0;
      metas[k] = unpack_meta(m, mat);
    }
  return metas;
}

// "" when the node files hold one state together, every row of every array once; else what is wrong.
std::string check_coverage(LevelSetReader::Impl& r, const std::vector<CheckpointMeta>& metas) {
  const LevelIndex& x = r.index;
  const std::size_t nf = metas.size();
  std::string problem;
  for (std::size_t k = 0; k < nf && problem.empty(); ++k) {
    const CheckpointMeta& m = metas[k];
    if (m.deck != metas[0].deck || m.physics != metas[0].physics || m.time != metas[0].time || m.units != metas[0].units)
      problem = "node files " + x.nodes[0].file + " and " + x.nodes[k].file + " hold other decks, physics or times";
    try {
      r.levels[k] = parse_level(m.level);
    } catch (const std::exception& e) {
      problem = x.nodes[k].file + ": " + e.what();
    }
  }
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
  return problem;
}

}  // namespace

LevelSetReader::LevelSetReader(const NodeGroups& nodes, const std::string& index_path, const std::string& durable_dir)
    : m_impl(std::make_unique<Impl>(Impl{nodes, index_path, {}, {}, 0, {}, {}, {}, {}, {}, {}, {}})) {
  Impl& r = *m_impl;
  const std::string what = "checkpoint " + index_path;
  r.index = read_level_index(nodes.world(), index_path);
  choose_copies(r, find_copies(nodes, r.index, durable_dir), what);
  const std::vector<CheckpointMeta> metas = open_node_files(r, what);
  const std::string problem = check_coverage(r, metas);
  if (!problem.empty()) throw InputError(what + ": " + problem);
  r.meta = metas[0];
  r.meta.level.clear();
  r.meta.nranks = 0;
  for (const auto& m : metas) r.meta.nranks += m.nranks;
  for (const auto& f : r.index.nodes) r.bytes += f.size;
}

LevelSetReader::~LevelSetReader() = default;

const CheckpointMeta& LevelSetReader::meta() const { return m_impl->meta; }
const std::string& LevelSetReader::path() const { return m_impl->path; }
std::uint64_t LevelSetReader::bytes() const { return m_impl->bytes; }
const std::vector<std::string>& LevelSetReader::sources() const { return m_impl->sources; }
const std::vector<std::string>& LevelSetReader::skipped() const { return m_impl->skipped; }

namespace {

// Array `e` of the node files read on this rank's node (`parts`) sent to the ranks that own its rows in an
// even split of the run's rows (collective; InputError on every rank).
StateArray redistribute(LevelSetReader::Impl& r, const std::vector<SolverState>& parts, const StateArray& e,
                        const std::string& what) {
  const comm::Communicator& world = r.nodes.world();
  const std::size_t nf = r.readers.size();
  const int P = world.size();
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
  return a;
}

}  // namespace

SolverState LevelSetReader::read(const std::vector<StateArray>& wanted) {
  Impl& r = *m_impl;
  const comm::Communicator& world = r.nodes.world();
  const std::string what = "checkpoint " + r.path + ": ";
  std::vector<StateArray> expected;  // the wanted datasets the set has (an optional one may be absent)
  for (const auto& e : wanted) {
    auto it = r.global_rows.find(e.name);
    if (it == r.global_rows.end() && e.optional) continue;
    expected.push_back(e);
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
  // A row extent the layout leaves open (StateArray::k_any_extent) is the files': every rank takes the
  // largest any of its parts has (one the rank holds no part of has none).
  for (StateArray& e : expected)
    for (std::size_t d = 0; d < e.inner.size(); ++d) {
      if (e.inner[d] != StateArray::k_any_extent) continue;
      std::int64_t extent = 0;
      for (const SolverState& part : parts)
        if (const StateArray* got = part.find(e.name)) extent = std::max<std::int64_t>(extent, static_cast<std::int64_t>(got->inner[d]));
      e.inner[d] = static_cast<std::uint64_t>(world.max(extent));
    }
  // Every row to the rank that owns it in an even split of the run's rows (as CheckpointReader::read).
  for (const StateArray& e : expected) out.arrays.push_back(redistribute(r, parts, e, what));
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
