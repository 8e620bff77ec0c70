// Checkpoint throughput: io::write_checkpoint and io::read_checkpoint of an MD-like state (the /md/
// layout of docs/checkpoint-format.md: id, x, v, f, image, x_build = 16 values of 8 bytes per atom), and
// in the same run two raw writes of the same number of bytes into the same directory:
//   raw mpi-io : every rank writes its contiguous share with MPI_File_write_at_all, MPI_File_sync, close
//   raw posix  : rank 0 alone writes all bytes with fwrite, fflush, fsync (no gather: a lower bound)
//   raw read   : then every rank reads its contiguous share of that file back with MPI_File_read_at_all
//                into a buffer allocated and touched before the timer starts
//   raw read into new memory : the same read into a buffer allocated inside the timed region (new char[],
//                its pages first touched by the read), as read_checkpoint, which returns a new state, must
// The ratio is write_checkpoint against the faster raw write (target >= 0.7), and read_checkpoint against
// the raw read (target >= 0.5) and against the raw read into new memory. Every time is the median of the
// repetitions, measured between barriers, so it is the slowest rank's time. Each read follows a write of
// the same file, so it is served mostly from the page cache, the checkpoint's and the raw ones alike.
// The benchmark checks its own result: the state read back must equal the state written, bitwise, and
// the raw reads must return the bytes written (checked after the timer), else it prints ERROR and exits 1.
//
//   mpirun -np N build-dir/bench/bench_checkpoint [--samples] [--levels LOCAL_DIR [--nice N] [--async-window S]
//       [--durable LOCATION [--durable-nice N] [--durable-window S] [--rclone PROGRAM]]] [DIR=/tmp] [REPS=5]
//       [ATOMS...=32000 256000 2048000]
//
// --samples: after each size, lines "SAMPLES {json}" with every repetition's MB/s (bench/suite.py).
// --levels LOCAL_DIR: also the multilevel checkpoint (io/checkpoint_levels.hpp) of the same state, each
//   rank a node of its own (host "bench-node-<rank>"), the node files in LOCAL_DIR (say /dev/shm), with
//   partner copies from 2 ranks on, the index in DIR: the time the time loop is blocked per checkpoint
//   (local + partner + index) against write_checkpoint's into DIR, and the set read back bitwise. Then, where
//   MPI provides MPI_THREAD_MULTIPLE (asked for with --levels), the same set written in the background
//   (io::LevelSetWriter, checkpoint.async): the time the loop is blocked for the snapshot (a host copy of the
//   state into the memory of the previous set, checked finite, the writer started) against the shared write, the background write's own time,
//   and a synthetic MD step (a Lennard-Jones-like sweep over 20 neighbours of every atom of the rank, and a
//   small allreduce, as the thermo) timed while the set is written and as many steps right after without it:
//   the slowdown the background write costs the loop. The set is read back bitwise. The writer runs at nice
//   10 (checkpoint.background_nice's default); --nice N sets another value. The synthetic step makes one small
//   allreduce: it does not show how a writer at low priority that holds an MPI lock stalls a halo exchange.
//   --async-window S (bench/suite.py --quick): the steps are timed during at most the first S seconds of each
//   background write, which then finishes without them (the loop waits: the write's own time is then not the
//   one beside a loop); beside other work a writer at nice 10 can take minutes.
// --durable LOCATION (with --levels; a directory or an rclone remote:path): then the set written in the
//   background is flushed there once (io::DurableFlush: rclone uploads of the node files and the index, at nice
//   19, checkpoint.durable_nice's default; --durable-nice N sets another value), and the synthetic step is timed
//   while the flush runs and as many steps right after: the slowdown the durable flush costs the loop. The
//   flushed node files must equal the local ones (rclone's size and hash, as a run checks them).
//   --durable-window S (bench/suite.py --quick): the steps are timed during the flush for at most S seconds;
//   a flush still running then is cancelled (its uploads killed), and the steps timed until then are the
//   samples: the loop's slowdown while the uploads run at that nice value, in a time bound that a flush at
//   nice 19 beside busy cores does not keep. The flush is then not checked (the full run checks it).
//   --rclone PROGRAM: the rclone program (a path or a name on PATH); by default SPOTRUN_RCLONE of the
//   environment, as spotrun's, else "rclone".
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <memory>
#include <optional>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "io/checkpoint.hpp"
#include "io/checkpoint_durable.hpp"
#include "io/checkpoint_levels.hpp"

namespace {

using namespace spotrun;

struct Spec {
  const char* name;
  std::uint64_t width;  // values per atom
  bool is_integer;
};
constexpr Spec k_md[] = {{"/md/id", 1, true},      {"/md/x", 3, false},     {"/md/v", 3, false},
                         {"/md/f", 3, false},      {"/md/image", 3, true},  {"/md/x_build", 3, false}};

std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

io::SolverState md_state(const comm::Communicator& comm, std::uint64_t natoms) {
  io::SolverState s;
  s.solver = "md";
  std::uint64_t first = 0, count = 0;
  io::block_of(natoms, comm.size(), comm.rank(), first, count);
  for (const Spec& spec : k_md) {
    io::StateArray a;
    a.name = spec.name;
    if (spec.width > 1) a.inner = {spec.width};
    a.is_integer = spec.is_integer;
    a.global_rows = natoms;
    a.first_row = first;
    a.rows = count;
    const std::uint64_t n = count * spec.width;
    if (spec.is_integer) {
      a.i64.resize(n);
      for (std::uint64_t i = 0; i < n; ++i)
        a.i64[i] = std::string(spec.name) == "/md/id" ? static_cast<std::int64_t>(first + i + 1)
                                                      : static_cast<std::int64_t>(mix(first * spec.width + i) % 5) - 2;
    } else {
      a.f64.resize(n);
      for (std::uint64_t i = 0; i < n; ++i) a.f64[i] = static_cast<double>(mix(first * spec.width + i + n) >> 11) * 0x1p-40;
    }
    s.arrays.push_back(std::move(a));
  }
  s.reals["time"] = 1.0;
  s.integers["step"] = 1000;
  return s;
}

std::vector<io::StateArray> md_layout(std::uint64_t natoms) {
  std::vector<io::StateArray> out;
  for (const Spec& spec : k_md) {
    io::StateArray a;
    a.name = spec.name;
    if (spec.width > 1) a.inner = {spec.width};
    a.is_integer = spec.is_integer;
    a.global_rows = natoms;
    out.push_back(a);
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

template <class F>
double timed(const comm::Communicator& comm, F&& f) {
  comm.barrier();
  const double t0 = MPI_Wtime();
  f();
  comm.barrier();
  return MPI_Wtime() - t0;
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    std::fprintf(stderr, "ERROR: %s failed\n", what);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

// Every rank writes its contiguous share of `bytes` bytes, syncs, closes (collective).
void raw_mpiio(const comm::Communicator& comm, const std::string& path, const std::vector<char>& buffer,
               std::uint64_t first_byte) {
  MPI_File fh;
  check(MPI_File_open(comm.mpi(), path.c_str(), MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh), "MPI_File_open");
  check(MPI_File_set_size(fh, 0), "MPI_File_set_size");
  // In pieces of at most 1 GiB (int counts).
  const std::uint64_t piece = std::uint64_t(1) << 30;
  std::uint64_t mine = (buffer.size() + piece - 1) / piece, rounds = 0;
  MPI_Allreduce(&mine, &rounds, 1, MPI_UINT64_T, MPI_MAX, comm.mpi());
  for (std::uint64_t r = 0; r < rounds; ++r) {
    const std::uint64_t off = r * piece;
    const int n = off < buffer.size() ? static_cast<int>(std::min<std::uint64_t>(piece, buffer.size() - off)) : 0;
    check(MPI_File_write_at_all(fh, static_cast<MPI_Offset>(first_byte + off), buffer.data() + (n ? off : 0), n, MPI_BYTE,
                                MPI_STATUS_IGNORE),
          "MPI_File_write_at_all");
  }
  check(MPI_File_sync(fh), "MPI_File_sync");
  check(MPI_File_close(&fh), "MPI_File_close");
}

// Every rank reads its contiguous share of `bytes` bytes back into `buffer` (collective).
void raw_mpiio_read(const comm::Communicator& comm, const std::string& path, char* buffer, std::uint64_t bytes,
                    std::uint64_t first_byte) {
  MPI_File fh;
  check(MPI_File_open(comm.mpi(), path.c_str(), MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), "MPI_File_open");
  const std::uint64_t piece = std::uint64_t(1) << 30;
  std::uint64_t mine = (bytes + piece - 1) / piece, rounds = 0;
  MPI_Allreduce(&mine, &rounds, 1, MPI_UINT64_T, MPI_MAX, comm.mpi());
  for (std::uint64_t r = 0; r < rounds; ++r) {
    const std::uint64_t off = r * piece;
    const int n = off < bytes ? static_cast<int>(std::min<std::uint64_t>(piece, bytes - off)) : 0;
    check(MPI_File_read_at_all(fh, static_cast<MPI_Offset>(first_byte + off), buffer + (n ? off : 0), n, MPI_BYTE,
                               MPI_STATUS_IGNORE),
          "MPI_File_read_at_all");
  }
  check(MPI_File_close(&fh), "MPI_File_close");
}

bool all_bytes(const char* buffer, std::uint64_t bytes, char expected) {
  return std::all_of(buffer, buffer + bytes, [&](char c) { return c == expected; });
}

// Rank 0 writes all bytes with stdio and fsync.
void raw_posix(const comm::Communicator& comm, const std::string& path, const std::vector<char>& all) {
  if (!comm.is_root()) return;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(all.data(), 1, all.size(), f) != all.size() || std::fflush(f) != 0 || ::fsync(fileno(f)) != 0) {
    std::fprintf(stderr, "ERROR: raw write of %s failed\n", path.c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  std::fclose(f);
}

bool same_state(const io::SolverState& a, const io::SolverState& b) {
  if (a.arrays.size() != b.arrays.size()) return false;
  for (std::size_t i = 0; i < a.arrays.size(); ++i) {
    const auto& x = a.arrays[i];
    const auto& y = b.arrays[i];
    if (x.name != y.name || x.first_row != y.first_row || x.rows != y.rows || x.i64 != y.i64 || x.f64.size() != y.f64.size() ||
        std::memcmp(x.f64.data(), y.f64.data(), x.f64.size() * sizeof(double)) != 0)
      return false;
  }
  return true;
}

// SAMPLES {"quantity": ..., "atoms": ..., "ranks": ..., "mb": ..., "values": [MB/s of each repetition]}
void print_samples(const char* quantity, std::uint64_t natoms, int ranks, double mb, const std::vector<double>& seconds) {
  std::ostringstream s;
  s.precision(9);
  s << "SAMPLES {\"quantity\":\"" << quantity << "\",\"atoms\":" << natoms << ",\"ranks\":" << ranks << ",\"mb\":" << mb
    << ",\"values\":[";
  for (std::size_t i = 0; i < seconds.size(); ++i) s << (i ? "," : "") << mb / seconds[i];
  s << "]}";
  std::printf("%s\n", s.str().c_str());
}

void print_time_samples(const char* quantity, std::uint64_t natoms, int ranks, const std::vector<double>& seconds) {
  std::ostringstream s;
  s.precision(9);
  s << "SAMPLES {\"quantity\":\"" << quantity << "\",\"atoms\":" << natoms << ",\"ranks\":" << ranks << ",\"values\":[";
  for (std::size_t i = 0; i < seconds.size(); ++i) s << (i ? "," : "") << seconds[i];
  s << "]}";
  std::printf("%s\n", s.str().c_str());
}

// A synthetic MD step of the rank's atoms: a Lennard-Jones-like force over 20 neighbours of each atom (the
// pair count of a half neighbour list at cutoff 2.5 sigma), then an allreduce of the energy (the thermo).
class SyntheticStep {
 public:
  SyntheticStep(std::uint64_t atoms, int rank) : m_n(std::max<std::uint64_t>(atoms, 32)), m_x(3 * m_n), m_f(3 * m_n) {
    for (std::uint64_t i = 0; i < 3 * m_n; ++i) m_x[i] = 1.0 + static_cast<double>(mix(i + 977 * rank) % 1000) * 1e-3;
  }
  double operator()(const comm::Communicator& comm) {
    double energy = 0;
    const std::uint64_t n = m_n;
    std::fill(m_f.begin(), m_f.end(), 0.0);
    for (std::uint64_t i = 0; i < n; ++i) {
      for (std::uint64_t j = 1; j <= 20; ++j) {
        const std::uint64_t k = (i + 7 * j) % n;
        const double dx = m_x[3 * i] - m_x[3 * k] + 1.0, dy = m_x[3 * i + 1] - m_x[3 * k + 1], dz = m_x[3 * i + 2] - m_x[3 * k + 2];
        const double r2 = dx * dx + dy * dy + dz * dz, sr2 = 1.0 / r2, sr6 = sr2 * sr2 * sr2;
        const double fpair = 24.0 * sr6 * (2.0 * sr6 - 1.0) * sr2;
        m_f[3 * i] += fpair * dx;
        m_f[3 * i + 1] += fpair * dy;
        m_f[3 * i + 2] += fpair * dz;
        energy += 4.0 * sr6 * (sr6 - 1.0);
      }
    }
    for (std::uint64_t i = 0; i < 3 * n; ++i) m_x[i] += 1e-12 * m_f[i];
    return comm.sum(energy);
  }

 private:
  std::uint64_t m_n;
  std::vector<double> m_x, m_f;
};

// The command line: [--samples] [--levels DIR] [--nice N] [--durable LOCATION] [--durable-nice N]
// [--durable-window S] [--rclone PROGRAM] [--async-window S] [DIR [REPS [ATOMS...]]]; and SPOTRUN_RCLONE of
// the environment (this program reads it, as spotrun's launcher does: io::DurableSettings::rclone).
struct Options {
  bool samples = false;
  std::string levels_dir;
  int nice = 10, durable_nice = 19;
  double durable_window = 0;  // seconds; 0: the whole flush
  double async_window = 0;    // seconds; 0: the whole background write
  std::string durable;
  std::string rclone;  // "": "rclone"
  std::string dir = "/tmp";
  int reps = 5;
  std::vector<std::uint64_t> sizes;
};

Options parse_options(int argc, char** argv) {
  Options o;
  if (const char* rclone = std::getenv("SPOTRUN_RCLONE")) o.rclone = rclone;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--samples") o.samples = true;
    else if (std::string(argv[i]) == "--levels" && i + 1 < argc) o.levels_dir = argv[++i];
    else if (std::string(argv[i]) == "--nice" && i + 1 < argc) o.nice = std::atoi(argv[++i]);
    else if (std::string(argv[i]) == "--durable" && i + 1 < argc) o.durable = argv[++i];
    else if (std::string(argv[i]) == "--durable-nice" && i + 1 < argc) o.durable_nice = std::atoi(argv[++i]);
    else if (std::string(argv[i]) == "--durable-window" && i + 1 < argc) o.durable_window = std::atof(argv[++i]);
    else if (std::string(argv[i]) == "--rclone" && i + 1 < argc) o.rclone = argv[++i];
    else if (std::string(argv[i]) == "--async-window" && i + 1 < argc) o.async_window = std::atof(argv[++i]);
    else args.emplace_back(argv[i]);
  }
  if (args.size() > 0) o.dir = args[0];
  if (args.size() > 1) o.reps = std::max(1, std::atoi(args[1].c_str()));
  for (std::size_t i = 2; i < args.size(); ++i) o.sizes.push_back(std::strtoull(args[i].c_str(), nullptr, 10));
  if (o.sizes.empty()) o.sizes = {32000, 256000, 2048000};
  return o;
}

// What one system size shares between the sections: the state, its bytes, the shared write's times.
struct Case {
  std::uint64_t natoms = 0;
  io::SolverState state;
  double mb = 0;
  std::vector<double> t_write;
  std::string tag, ckpt, raw;
  io::CheckpointMeta meta;
};

// The shared file against raw MPI-IO and POSIX writes and reads of the same bytes; false when data read
// back differs.
bool bench_shared(const comm::Communicator& comm, const Options& opt, Case& c) {
  const std::uint64_t natoms = c.natoms;
  const io::SolverState& state = c.state;
  const int reps = opt.reps;
  const bool samples = opt.samples;
  const std::string& ckpt = c.ckpt;
  const std::string& raw = c.raw;
  const io::CheckpointMeta& meta = c.meta;
  std::uint64_t my_bytes = 0;
  for (const auto& a : state.arrays) my_bytes += (a.f64.size() + a.i64.size()) * 8;
  std::uint64_t total = 0, first_byte = 0;
  MPI_Allreduce(&my_bytes, &total, 1, MPI_UINT64_T, MPI_SUM, comm.mpi());
  MPI_Exscan(&my_bytes, &first_byte, 1, MPI_UINT64_T, MPI_SUM, comm.mpi());
  if (comm.is_root()) first_byte = 0;
  std::vector<char> mine(my_bytes, 7), all(comm.is_root() ? total : 0, 7);

  std::vector<double> t_write, t_read, t_mpiio, t_posix, t_raw, t_raw_read, t_raw_read_new;
  bool ok = true;
  for (int r = 0; r < reps; ++r) {
    t_write.push_back(timed(comm, [&] { io::write_checkpoint(comm, ckpt, meta, state); }));
    io::SolverState back;
    t_read.push_back(timed(comm, [&] { back = io::read_checkpoint(comm, ckpt, md_layout(natoms)); }));
    ok = ok && same_state(back, state);
    t_mpiio.push_back(timed(comm, [&] { raw_mpiio(comm, raw, mine, first_byte); }));
    t_posix.push_back(timed(comm, [&] { raw_posix(comm, raw, all); }));
    t_raw.push_back(std::min(t_mpiio.back(), t_posix.back()));  // the faster raw write of this repetition
    std::fill(mine.begin(), mine.end(), 0);
    t_raw_read.push_back(timed(comm, [&] { raw_mpiio_read(comm, raw, mine.data(), mine.size(), first_byte); }));
    ok = ok && all_bytes(mine.data(), mine.size(), 7);
    std::unique_ptr<char[]> fresh;
    t_raw_read_new.push_back(timed(comm, [&] {
      fresh.reset(new char[my_bytes]);
      raw_mpiio_read(comm, raw, fresh.get(), my_bytes, first_byte);
    }));
    ok = ok && all_bytes(fresh.get(), my_bytes, 7);
    fresh.reset();
    std::fill(mine.begin(), mine.end(), 7);
    comm.barrier();
    if (comm.is_root()) {
      std::remove(ckpt.c_str());
      std::remove(raw.c_str());
    }
  }
  ok = !comm.any(!ok);
  const double mb = static_cast<double>(total) / 1e6;
  const double w = mb / median(t_write), rd = mb / median(t_read), m = mb / median(t_mpiio), p = mb / median(t_posix);
  const double rr = mb / median(t_raw_read), rn = mb / median(t_raw_read_new);
  const double base = std::max(m, p);
  if (comm.is_root()) {
    std::printf("  %9llu %9.1f %12.1f %12.1f %14.1f %14.1f %11.2f %13.1f %9.2f %13.1f %9.2f  %s%s\n",
                static_cast<unsigned long long>(natoms), mb, w, rd, m, p, w / base, rr, rd / rr, rn, rd / rn,
                m >= p ? "raw mpi-io" : "raw posix", ok ? "" : "   ERROR: data read back differs");
    if (samples) {
      print_samples("write_MBps", natoms, comm.size(), mb, t_write);
      print_samples("read_MBps", natoms, comm.size(), mb, t_read);
      print_samples("raw_mpiio_MBps", natoms, comm.size(), mb, t_mpiio);
      print_samples("raw_posix_MBps", natoms, comm.size(), mb, t_posix);
      print_samples("raw_write_MBps", natoms, comm.size(), mb, t_raw);
      print_samples("raw_read_MBps", natoms, comm.size(), mb, t_raw_read);
      print_samples("raw_read_new_MBps", natoms, comm.size(), mb, t_raw_read_new);
    }
    std::fflush(stdout);
  }
  c.mb = mb;
  c.t_write = t_write;
  return ok;
}

// The level set written in the background beside synthetic steps, and the durable flush of the last set.
bool bench_async(const comm::Communicator& comm, const Options& opt, const Case& c, io::NodeGroups& nodes, bool partner,
                 const std::string& index, const std::string& local) {
  const std::uint64_t natoms = c.natoms;
  const io::SolverState& state = c.state;
  const int reps = opt.reps;
  const bool samples = opt.samples;
  const int nice = opt.nice, durable_nice = opt.durable_nice;
  const double durable_window = opt.durable_window, async_window = opt.async_window;
  const std::string& durable = opt.durable;
  const std::string& tag = c.tag;
  const io::CheckpointMeta& meta = c.meta;
  const double mb = c.mb;
  const std::vector<double>& t_write = c.t_write;
  if (comm.is_root()) std::filesystem::create_directories(local + "/partner");
  comm.barrier();
  io::LevelSetWriter writer(comm, "bench-node-" + std::to_string(comm.rank()), nice);
  SyntheticStep step(natoms / comm.size(), comm.rank());
  std::vector<double> t_block, t_background, t_cost, t_busy, t_idle;
  bool aok = true;
  for (int r = 0; r < reps; ++r) {
    t_block.push_back(timed(comm, [&] {
      // The host copy Solver::state_reusing() makes, into the memory of the set written before (the
      // first repetition allocates it, as a run's first checkpoint does).
      io::SolverState snapshot = writer.take_spent();
      snapshot = state;
      bool finite = true;
      for (const auto& a : snapshot.arrays)
        for (const double v : a.f64) finite = finite && std::isfinite(v);
      aok = !comm.any(!finite) && aok;  // the finiteness check, agreed
      writer.start(local, partner, "ckpt-1000", index, meta, std::move(snapshot));
    }));
    std::optional<io::LevelSetWriter::Outcome> outcome;
    int steps = 0;
    const double w0 = MPI_Wtime();
    while (!outcome) {  // steps while the set is written, each polling for its end as the loop does
      t_busy.push_back(timed(comm, [&] { step(comm); }));
      outcome = writer.poll();
      ++steps;
      // --async-window: rank 0's clock ends the timed steps; the write then finishes without them.
      if (!outcome && async_window > 0 && comm.any(comm.is_root() && MPI_Wtime() - w0 > async_window))
        outcome = writer.wait();
    }
    aok = aok && outcome->error.empty();
    if (!outcome->error.empty() && comm.is_root()) std::printf("  ERROR: background write: %s\n", outcome->error.c_str());
    t_background.push_back(outcome->seconds);
    t_cost.push_back(outcome->cost);
    for (int k = 0; k < steps; ++k) t_idle.push_back(timed(comm, [&] { step(comm); }));
    io::LevelSetReader reader(nodes, index);
    aok = aok && same_state(reader.read(md_layout(natoms)), state);
  }
  aok = !comm.any(!aok);
  // The durable flush of the last set written, beside the same synthetic steps.
  std::vector<double> t_flushing, t_after;
  double flush_seconds = 0;
  std::string flushed;
  if (!durable.empty() && aok) {
    const std::string prefix = io::durable_join(io::durable_location(durable), "bench_checkpoint." + tag);
    {
      io::DurableFlush flush(nodes, prefix, local, io::DurableSettings{1, durable_nice, opt.rclone});
      const double f0 = MPI_Wtime();
      flush.start(writer.index());
      for (bool ended = false; !ended;) {
        t_flushing.push_back(timed(comm, [&] { step(comm); }));
        const io::DurableFlush::Event e = flush.poll();
        if (e.step >= 0) flushed = e.outcome.text();
        ended = comm.any(e.step >= 0);
        // --durable-window: rank 0's clock ends the timed steps; the flush still running is cancelled.
        if (!ended && durable_window > 0 &&
            comm.any(comm.is_root() && MPI_Wtime() - f0 > durable_window)) {
          flush.cancel();
          flushed = "window";
          ended = true;
        }
      }
      flush_seconds = MPI_Wtime() - f0;
    }
    flushed = comm.broadcast(flushed);
    for (std::size_t k = 0; k < t_flushing.size(); ++k) t_after.push_back(timed(comm, [&] { step(comm); }));
    if (comm.is_root()) io::run_rclone(opt.rclone, {"purge", prefix});
  }
  comm.barrier();
  if (comm.is_root()) {
    std::error_code ec;
    std::filesystem::remove_all(local, ec);
    std::remove(index.c_str());
    const double mb_ = median(t_block), ms = median(t_write), busy = median(t_busy), idle = median(t_idle);
    std::printf("  async  %9llu atoms: blocking %.4f s vs shared write %.4f s: %.1f%%; background write %.4f s (%.4f s of it not "
                "waiting for a CPU); step %.4f s during it vs %.4f s after it (%zu steps each): %+.1f%%%s\n",
                static_cast<unsigned long long>(natoms), mb_, ms, 100 * mb_ / ms, median(t_background), median(t_cost), busy, idle,
                t_busy.size(), 100 * (busy / idle - 1), aok ? "" : "   ERROR: the set written in the background differs");
    if (!durable.empty()) {
      if (flushed == "durable" || flushed == "window")
        std::printf("  durable %8llu atoms: flush %s %.2f s (rclone at nice %d); step %.4f s during it vs %.4f s "
                    "after it (%zu steps each): %+.1f%%\n",
                    static_cast<unsigned long long>(natoms),
                    flushed == "durable" ? "done in" : "cancelled at the window's end,", flush_seconds,
                    durable_nice, median(t_flushing), median(t_after), t_flushing.size(),
                    100 * (median(t_flushing) / median(t_after) - 1));
      else
        std::printf("  ERROR: durable flush to %s: %s\n", durable.c_str(), flushed.empty() ? "not done" : flushed.c_str());
    }
    if (samples) {
      print_samples("async_blocking_MBps", natoms, comm.size(), mb, t_block);
      print_time_samples("step_background_s", natoms, comm.size(), t_busy);
      print_time_samples("step_idle_s", natoms, comm.size(), t_idle);
      if (flushed == "durable" || flushed == "window") {
        print_time_samples("step_durable_s", natoms, comm.size(), t_flushing);
        print_time_samples("step_after_durable_s", natoms, comm.size(), t_after);
        // The flush's wall time, whether it ended (complete) or was cancelled at --durable-window.
        std::printf("SAMPLES {\"quantity\":\"durable_flush_s\",\"atoms\":%llu,\"ranks\":%d,\"nice\":%d,"
                    "\"window_s\":%.9g,\"complete\":%s,\"values\":[%.9g]}\n",
                    static_cast<unsigned long long>(natoms), comm.size(), durable_nice, durable_window,
                    flushed == "durable" ? "true" : "false", flush_seconds);
      }
    }
    std::fflush(stdout);
  }
  return aok && (durable.empty() || flushed == "durable" || flushed == "window");
}

// A level set (node files, partner copies, index) written blocking against the shared write; then, with
// MPI_THREAD_MULTIPLE, written in the background beside synthetic steps (bench_async). False when a set read
// back differs or a flush failed.
bool bench_levels(const comm::Communicator& comm, const Options& opt, const Case& c, int provided) {
  const std::uint64_t natoms = c.natoms;
  const io::SolverState& state = c.state;
  const int reps = opt.reps;
  const bool samples = opt.samples;
  const std::string& dir = opt.dir;
  const std::string& levels_dir = opt.levels_dir;
  const std::string& tag = c.tag;
  const io::CheckpointMeta& meta = c.meta;
  const double mb = c.mb;
  const std::vector<double>& t_write = c.t_write;
  io::NodeGroups nodes(comm, "bench-node-" + std::to_string(comm.rank()));
  const bool partner = nodes.count() > 1;
  const std::string index = dir + "/bench_checkpoint." + tag + ".levels";
  const std::string local = io::level_directory(levels_dir, dir + "/bench_checkpoint." + tag);
  if (comm.is_root()) std::printf("  levels: node files in %s (%s)\n", local.c_str(), partner ? "local + partner" : "local only: one node");
  MPI_Barrier(comm.mpi());
  if (comm.is_root()) std::filesystem::create_directories(local + "/partner");
  comm.barrier();
  std::vector<double> t_levels, t_local, t_partner;
  bool lok = true;
  for (int r = 0; r < reps; ++r) {
    io::LevelWriteTimes times;
    io::SolverState copy = state;  // the run hands its state over (moved): not timed
    t_levels.push_back(timed(comm, [&] {
      io::commit_level_index(comm, index,
                             io::write_level_set(nodes, local, "ckpt-1000", partner, meta, copy, &times));
    }));
    t_local.push_back(times.local);
    t_partner.push_back(times.partner);
    io::LevelSetReader reader(nodes, index);
    lok = lok && same_state(reader.read(md_layout(natoms)), state);
  }
  lok = !comm.any(!lok);
  comm.barrier();
  if (comm.is_root()) {
    std::error_code ec;
    std::filesystem::remove_all(local, ec);
    std::remove(index.c_str());
    const double ml = median(t_levels), ms = median(t_write);
    std::printf("  levels %9llu atoms: blocking %.4f s (local %.4f s, partner %.4f s) vs shared write %.4f s: %.1f%%%s\n",
                static_cast<unsigned long long>(natoms), ml, median(t_local), median(t_partner), ms, 100 * ml / ms,
                lok ? "" : "   ERROR: the set read back differs");
    if (samples) {
      print_samples("levels_MBps", natoms, comm.size(), mb, t_levels);
      print_samples("levels_local_MBps", natoms, comm.size(), mb, t_local);
    }
    std::fflush(stdout);
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    if (comm.is_root()) std::printf("  async: skipped, MPI does not provide MPI_THREAD_MULTIPLE\n");
    return lok;
  }
  return bench_async(comm, opt, c, nodes, partner, index, local) && lok;
}

}  // namespace

int main(int argc, char** argv) {
  // --levels: MPI_THREAD_MULTIPLE for the background write (io::LevelSetWriter), as spotrun asks for it.
  bool want_levels = false;
  for (int i = 1; i < argc; ++i) want_levels = want_levels || std::string(argv[i]) == "--levels";
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, want_levels ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
  int rc = 0;
  {
    comm::Communicator comm(MPI_COMM_WORLD);
    const Options opt = parse_options(argc, argv);
    Case c;
    c.tag = comm.broadcast(std::to_string(::getpid()));
    c.ckpt = opt.dir + "/bench_checkpoint." + c.tag + ".h5";
    c.raw = opt.dir + "/bench_checkpoint." + c.tag + ".raw";
    c.meta.solver = "md";
    c.meta.step = 1000;
    c.meta.time = 1.0;
    c.meta.units = "lj";
    c.meta.deck = "[run]\nsolver = \"md\"\n";
    c.meta.physics = "md.cutoff = 2.5\n";

    if (comm.is_root()) {
      std::printf("# checkpoint benchmark: %d ranks, directory %s, median of %d repetitions, MB = 1e6 bytes of array data\n",
                  comm.size(), opt.dir.c_str(), opt.reps);
      std::printf("# %9s %9s %12s %12s %14s %14s %11s %13s %9s %13s %9s  %s\n", "atoms", "MB", "write MB/s", "read MB/s",
                  "raw mpiio MB/s", "raw posix MB/s", "write/raw", "raw read MB/s", "read/raw", "raw new MB/s",
                  "read/new", "baseline");
      std::fflush(stdout);
    }
    for (const std::uint64_t natoms : opt.sizes) {
      c.natoms = natoms;
      c.state = md_state(comm, natoms);
      if (!bench_shared(comm, opt, c)) rc = 1;
      if (!opt.levels_dir.empty() && !bench_levels(comm, opt, c, provided)) rc = 1;
    }
  }
  MPI_Finalize();
  return rc;
}
