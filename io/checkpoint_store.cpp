#include "checkpoint_store.hpp"

#include "checkpoint_levels.hpp"
#include "comm/device.hpp"

namespace spotrun::io {
namespace {

// A level set with the node grouping it reads over (the reader keeps a reference to it).
class OwnedLevelSet final : public CheckpointSource {
 public:
  OwnedLevelSet(const comm::Communicator& comm, const std::string& path, const std::string& durable_dir)
      : m_nodes(std::make_unique<NodeGroups>(comm, comm::host_name())), m_reader(*m_nodes, path, durable_dir) {}
  const CheckpointMeta& meta() const override { return m_reader.meta(); }
  const std::string& path() const override { return m_reader.path(); }
  std::uint64_t bytes() const override { return m_reader.bytes(); }
  const std::vector<std::string>& sources() const override { return m_reader.sources(); }
  const std::vector<std::string>& skipped() const override { return m_reader.skipped(); }
  SolverState read(const std::vector<StateArray>& expected) override { return m_reader.read(expected); }
  VerifyReport verify() override { return m_reader.verify(); }

 private:
  std::unique_ptr<NodeGroups> m_nodes;
  LevelSetReader m_reader;
};

}  // namespace

CheckpointKind checkpoint_kind_of(const std::string& path) {
  const std::string ext = checkpoint_extension(CheckpointKind::level_set);
  return path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0
             ? CheckpointKind::level_set
             : CheckpointKind::shared_file;
}

std::unique_ptr<CheckpointSource> open_checkpoint(const comm::Communicator& comm, const std::string& path,
                                                  const std::string& durable_dir) {
  if (checkpoint_kind_of(path) == CheckpointKind::level_set)
    return std::make_unique<OwnedLevelSet>(comm, path, durable_dir);
  return std::make_unique<CheckpointReader>(comm, path);
}

}  // namespace spotrun::io
