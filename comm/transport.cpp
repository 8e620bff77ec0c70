// The transport factory and the batch helpers (the backends are in impl/, the staging in staging.cpp).
#include "transport.hpp"

#include <Kokkos_Core.hpp>

#include "errors.hpp"
#include "impl/transport_mpi.hpp"
#include "staging.hpp"

namespace spotrun::comm {

std::size_t Batch::send_bytes() const {
  std::size_t n = 0;
  for (const auto& m : sends) n += m.bytes;
  return n;
}
std::size_t Batch::recv_bytes() const {
  std::size_t n = 0;
  for (const auto& m : recvs) n += m.bytes;
  return n;
}

const std::vector<std::string>& transport_kinds() {
  static const std::vector<std::string> kinds = {"auto", "mpi", "mpi-host"};
  return kinds;
}

std::unique_ptr<Transport> make_transport(const TransportOptions& options, const Communicator& comm) {
  constexpr bool device_build =
      !Kokkos::SpaceAccessibility<Kokkos::HostSpace, Kokkos::DefaultExecutionSpace::memory_space>::accessible;
  std::string kind = options.kind;
  if (kind == "auto") kind = device_build && !impl::mpi_is_gpu_aware() ? "mpi-host" : "mpi";
  std::unique_ptr<Transport> t;
  if (kind == "mpi") {
    if (device_build && !impl::mpi_is_gpu_aware())
      throw InputError("comm.transport = \"mpi\" needs an MPI library that takes device memory (GPU-aware); this "
                       "one does not: use \"mpi-host\" or \"auto\"");
    t = std::make_unique<impl::TransportMpi>(comm, Accepts::either, options.route_self);
    if (options.force_staging) t = std::make_unique<StagedTransport>(std::move(t), true);
  } else if (kind == "mpi-host") {
    // Host batches pass straight through the wrapper; device batches are staged.
    t = std::make_unique<StagedTransport>(std::make_unique<impl::TransportMpi>(comm, Accepts::host, options.route_self),
                                          options.force_staging);
  } else {
    std::string allowed;
    for (const auto& k : transport_kinds()) allowed += (allowed.empty() ? "\"" : ", \"") + k + "\"";
    throw InputError("comm.transport '" + options.kind + "' is not known; allowed: " + allowed);
  }
  return t;
}

std::unique_ptr<Transport> make_transport(const std::string& kind, const Communicator& comm) {
  TransportOptions options;
  options.kind = kind;
  return make_transport(options, comm);
}

}  // namespace spotrun::comm
