#pragma once
// The run's nodes, grouped by host name (comm::host_name(): MPI_Get_processor_name), not by MPI's
// shared-memory split: ranks that Open MPI starts on one machine but that report different host names
// (simulated nodes in UTS namespaces of their own, as the tests make them) are on different nodes, as
// their node-local files and their heartbeats must be. One grouping for the checkpoint levels
// (launcher/run/checkpoint_levels.hpp) and the heartbeats (launcher/run/heartbeat.hpp).
#include <memory>

#include "comm/communicator.hpp"
#include "io/checkpoint_levels.hpp"

namespace spotrun::launcher {

// Collective (every rank of `comm`).
std::unique_ptr<io::NodeGroups> group_nodes(const comm::Communicator& comm);

}  // namespace spotrun::launcher
