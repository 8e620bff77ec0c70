#include "launcher/run/checkpoint_store.hpp"

#include "comm/errors.hpp"
#include "comm/number_text.hpp"
#include "io/checkpoint_durable.hpp"
#include "io/checkpoint_store.hpp"
#include "launcher/run/checkpointing.hpp"

namespace spotrun::launcher {
namespace {

std::string format_seconds(double s) { return significant(s, 3) + " s"; }

// One HDF5 file per checkpoint, written by every rank (io/checkpoint.hpp).
class SharedFileStore final : public CheckpointStore {
 public:
  explicit SharedFileStore(const comm::Communicator& comm) : m_comm(comm) {}
  io::CheckpointKind kind() const override { return io::CheckpointKind::shared_file; }
  std::unique_ptr<io::CheckpointSource> open(const CheckpointFile& c) override {
    return std::make_unique<io::CheckpointReader>(m_comm, c.path);
  }
  std::string write(const io::CheckpointMeta& meta, io::SolverState& state, const std::string& path) override {
    io::write_checkpoint(m_comm, path, meta, state);
    return "";
  }
  void prune(const std::vector<std::string>&) override {}

 private:
  const comm::Communicator& m_comm;
};

// Node files, partner copies and the durable tier (launcher/run/checkpoint_levels.hpp, io/checkpoint_levels.hpp).
class LevelSetStore final : public CheckpointStore {
 public:
  LevelSetStore(const comm::Communicator& comm, const std::string& outdir, const CheckpointSettings& s)
      : m_comm(comm),
        m_durable(!s.durable.empty()),
        m_rclone(s.rclone),
        m_levels(comm, outdir, s.local_dir, s.partner, s.durable, io::DurableSettings{s.keep, s.durable_nice, s.rclone},
                 s.async, s.background_nice) {}
  io::CheckpointKind kind() const override { return io::CheckpointKind::level_set; }
  CheckpointLevels* levels() override { return &m_levels; }
  // The sets of the durable tier, after the nodes' copies of the same step (a copy on the nodes is read first).
  std::vector<CheckpointFile> more_candidates() const override {
    std::vector<CheckpointFile> files;
    if (m_durable)
      for (const auto& d : io::list_durable_sets(m_comm, m_rclone, m_levels.durable_prefix()))
        files.push_back({d.index, d.step, true, d.set});
    return files;
  }
  std::unique_ptr<io::CheckpointSource> open(const CheckpointFile& c) override {
    if (!c.durable) return io::open_checkpoint(m_comm, c.path);
    // A set of the durable tier: downloaded into the nodes' local directories, then read from there.
    const std::string index = io::fetch_durable_set(m_levels.nodes(), m_rclone, m_levels.durable_prefix(),
                                                    {c.set, c.step, c.path}, m_levels.download_directory());
    return io::open_checkpoint(m_comm, index, m_levels.download_directory());
  }
  std::string write(const io::CheckpointMeta& meta, io::SolverState& state, const std::string& path) override {
    // The set's name: the index's file name without its extension ("ckpt-<step>", "final").
    const std::string name = path.substr(path.find_last_of('/') + 1);
    const io::LevelWriteTimes times = m_levels.write(meta, state, name.substr(0, name.rfind('.')), path);
    return "local " + format_seconds(times.local) + (m_levels.partner() ? ", partner " + format_seconds(times.partner) : "");
  }
  void prune(const std::vector<std::string>& kept) override { m_levels.prune(kept); }

 private:
  const comm::Communicator& m_comm;
  bool m_durable;
  std::string m_rclone;  // the rclone program (CheckpointSettings::rclone)
  CheckpointLevels m_levels;
};

}  // namespace

std::unique_ptr<CheckpointStore> make_checkpoint_store(const comm::Communicator& comm, const std::string& outdir,
                                                       const CheckpointSettings& s) {
  if (!s.durable.empty() && s.local_dir.empty())
    throw InputError("checkpoint.durable = \"" + s.durable + "\" needs checkpoint.local_dir (the durable tier "
                     "holds copies of the node files). Allowed: set checkpoint.local_dir to a node-local directory, or "
                     "checkpoint.durable = \"\"");
  if (!s.local_dir.empty()) return std::make_unique<LevelSetStore>(comm, outdir, s);
  return std::make_unique<SharedFileStore>(comm);
}

}  // namespace spotrun::launcher
