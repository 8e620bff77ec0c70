#pragma once
// Where a run's checkpoints live: one kind, chosen once (make_checkpoint_store) from the deck --
//   one shared file  OUTDIR/checkpoints/ckpt-<step>.h5 (and final.h5), written by every rank with parallel HDF5;
//   a level set      node files in each node's checkpoint.local_dir, partner copies, the durable tier, committed by
//                    the index OUTDIR/checkpoints/ckpt-<step>.levels (launcher/run/checkpoint_levels.hpp).
// The checkpoint manager (launcher/run/checkpointing.hpp) asks the store to write, open, list and prune, and
// never which kind it is; readers outside a run open either kind with io::open_checkpoint (io/checkpoint_store.hpp).
// Another kind is a class derived from CheckpointStore and its line in make_checkpoint_store (checkpoint_store.cpp).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "io/checkpoint.hpp"
#include "io/run_directory.hpp"
#include "launcher/run/checkpoint_levels.hpp"

namespace spotrun::launcher {

struct CheckpointSettings;

// A checkpoint a resume may read: a file or an index in OUTDIR, or a set of the durable tier.
struct CheckpointFile {
  std::string path;
  std::int64_t step = -1;
  bool durable = false;  // path: the index of a set in the durable tier (checkpoint.durable)
  std::string set;       // its name there
};

class CheckpointStore {
 public:
  virtual ~CheckpointStore() = default;
  virtual io::CheckpointKind kind() const = 0;
  // Where the checkpoint of `step`, and the final state, are committed (io/run_directory.hpp's names).
  std::string path(const std::string& outdir, std::int64_t step) const { return io::checkpoint_name(step, kind()).path(outdir); }
  std::string final_path(const std::string& outdir) const { return io::final_name(kind()).path(outdir); }
  // Candidates of a resume besides OUTDIR's own files (the durable tier's sets); collective, the same on every rank.
  virtual std::vector<CheckpointFile> more_candidates() const { return {}; }
  // Opens a candidate for reading from its best surviving copy (a durable set is downloaded to the nodes first);
  // collective; InputError on every rank when it is refused.
  virtual std::unique_ptr<io::CheckpointSource> open(const CheckpointFile& candidate) = 0;
  // Writes `state` as the checkpoint committed at `path` (collective; std::runtime_error on every rank). Returns
  // what the checkpoint's line says of its levels ("" for one file). `state` stays the caller's.
  virtual std::string write(const io::CheckpointMeta& meta, io::SolverState& state, const std::string& path) = 0;
  // Removes what belongs to no set of `kept` (their names, "ckpt-<step>" or "final") and what an interrupted
  // write left, beyond OUTDIR/checkpoints (which the keep policy prunes); collective.
  virtual void prune(const std::vector<std::string>& kept) = 0;
  // A level set's levels (the background writer, the durable tier), or null.
  virtual CheckpointLevels* levels() { return nullptr; }
};

// The store of a run's deck (collective): a level set with checkpoint.local_dir, else one shared file.
// InputError on every rank for settings that do not go together (checkpoint.durable without local_dir) or that
// the nodes refuse (launcher/run/checkpoint_levels.hpp).
std::unique_ptr<CheckpointStore> make_checkpoint_store(const comm::Communicator& comm, const std::string& outdir,
                                                       const CheckpointSettings& settings);

}  // namespace spotrun::launcher
