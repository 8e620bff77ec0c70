#pragma once
// Transports by registration (docs/layout.md, "Extension points"): a transport is one entry {name,
// unavailable, make}. The built-in ones (mpi, mpi-host, nccl) are entries of transport.cpp's table; any
// other is one file that registers itself at namespace scope, linked into the program that uses it:
//
//   const bool registered = spotrun::comm::register_transport({"loopback", unavailable, make});
//
// The name becomes a value of comm.transport (transport_kinds(), the deck schema's choices) and
// make_transport() makes it; "auto" chooses among the built-in ones only (choose_transport()).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "transport.hpp"

namespace spotrun::comm {

struct TransportRegistration {
  std::string name;  // the value of comm.transport
  // Why this transport cannot run with this build, at this many ranks, on these GPUs: the whole message
  // of the InputError make_transport() throws on every rank (naming comm.transport and what is allowed);
  // empty when it can. `devices` is every rank's GPU analysed, or nullptr where they were not gathered
  // (a host build, or needs_devices false).
  std::function<std::string(const TransportBuild& build, int ranks, const DeviceReport* devices)> unavailable;
  // Makes it (collective). `devices`: every rank's GPU, indexed by rank; empty where not gathered.
  std::function<std::unique_ptr<Transport>(const Communicator& comm, const TransportOptions& options,
                                           const std::vector<DeviceInfo>& devices)>
      make;
  // On a device build, unavailable() and make() need every rank's GPU (gathered by make_transport()).
  bool needs_devices = false;
};

// Adds a transport. A name that is already registered, "auto", or an entry without unavailable() or make()
// throws std::logic_error. Returns true, for a namespace-scope registration.
bool register_transport(TransportRegistration registration);
// The registration of `name`, or nullptr.
const TransportRegistration* find_transport(const std::string& name);

}  // namespace spotrun::comm
