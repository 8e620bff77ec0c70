#include "launcher/run/node_groups.hpp"

#include "comm/device.hpp"

namespace spotrun::launcher {

std::unique_ptr<io::NodeGroups> group_nodes(const comm::Communicator& comm) {
  return std::make_unique<io::NodeGroups>(comm, comm::host_name());
}

}  // namespace spotrun::launcher
