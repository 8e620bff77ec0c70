// The transport factory and the batch helpers (the backends are in impl/, the staging in staging.cpp).
#include "transport.hpp"

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "errors.hpp"
#include "impl/transport_mpi.hpp"
#include "impl/transport_nccl.hpp"
#include "nccl_library.hpp"
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
  static const std::vector<std::string> kinds = {"auto", "mpi", "mpi-host", "nccl"};
  return kinds;
}

TransportChoice choose_transport(const std::string& kind, int ranks, const TransportBuild& build,
                                 const DeviceReport* devices) {
  const bool known = std::find(transport_kinds().begin(), transport_kinds().end(), kind) != transport_kinds().end();
  if (!known) {
    std::string allowed;
    for (const auto& k : transport_kinds()) allowed += (allowed.empty() ? "\"" : ", \"") + k + "\"";
    throw InputError("comm.transport '" + kind + "' is not known; allowed: " + allowed);
  }
  const bool need_devices = build.device_build && (kind == "nccl" || (kind == "auto" && ranks > 1));
  if (need_devices && !devices) throw std::logic_error("choose_transport: the devices are needed on a device build");
  if (kind == "nccl") {
    if (!build.nccl_compiled)
      throw InputError("comm.transport = \"nccl\": NCCL is not compiled in (spotrun was configured without NCCL; "
                       "see docs/gpu.md): use \"auto\", \"mpi\" or \"mpi-host\"");
    if (!build.nccl_missing.empty())
      throw InputError("comm.transport = \"nccl\": " + build.nccl_missing + "; install NCCL 2 where the dynamic "
                       "loader finds it (LD_LIBRARY_PATH), or use \"auto\", \"mpi\" or \"mpi-host\"");
    if (!build.device_build)
      throw InputError("comm.transport = \"nccl\" needs a CUDA build: this build's Kokkos keeps the data in host memory; "
                       "use \"auto\" or \"mpi\"");
    if (!devices->nccl_refusal.empty())
      throw InputError("comm.transport = \"nccl\": " + devices->nccl_refusal +
                       "; NCCL needs a GPU of its own for every rank (\"Duplicate GPU detected\"): start one rank per "
                       "GPU, or use \"auto\" or \"mpi\"");
    return {"nccl", ""};
  }
  if (kind == "mpi" && build.device_build && !build.mpi_gpu_aware)
    throw InputError("comm.transport = \"mpi\" needs an MPI library that takes device memory (GPU-aware); this "
                     "one does not: use \"mpi-host\" or \"auto\"");
  if (kind != "auto") return {kind, ""};
  if (ranks == 1) {
    // Every halo and transpose is a copy within the rank (movers copy messages to themselves): nothing
    // moves between ranks, so NCCL is not worth its start-up. Host batches (checkpoint records) go to MPI.
    if (!build.device_build) return {"mpi", "one rank: every halo is a local copy"};
    return {build.mpi_gpu_aware ? "mpi" : "mpi-host", "one rank: every halo is a local copy, NCCL is not started"};
  }
  if (!build.device_build) return {"mpi", "host build (the data is in host memory)"};
  if (build.nccl_compiled && build.nccl_missing.empty() && devices->nccl_refusal.empty()) return {"nccl", ""};
  const std::string not_nccl = !build.nccl_compiled          ? "NCCL is not compiled in"
                               : !build.nccl_missing.empty() ? build.nccl_missing
                                                             : devices->nccl_refusal + ", which NCCL refuses";
  if (build.mpi_gpu_aware) return {"mpi", not_nccl + "; MPI is GPU-aware"};
  return {"mpi-host", not_nccl + "; MPI is not GPU-aware"};
}

namespace {

// SPOTRUN_NCCL_TIMEOUT (seconds > 0) or the default; the same verdict on every rank.
double nccl_timeout(const TransportOptions& options, const Communicator& comm) {
  if (options.nccl_timeout_s > 0) return options.nccl_timeout_s;
  const char* text = std::getenv("SPOTRUN_NCCL_TIMEOUT");
  double seconds = 300;
  bool ok = true;
  if (text && *text) {
    char* end = nullptr;
    seconds = std::strtod(text, &end);
    ok = end && *end == '\0' && seconds > 0 && std::isfinite(seconds);
  }
  comm.agree<InputError>(ok, std::string("SPOTRUN_NCCL_TIMEOUT='") + (text ? text : "") +
                                 "' is not a number of seconds > 0");
  return seconds;
}

}  // namespace

std::unique_ptr<Transport> make_transport(const TransportOptions& options, const Communicator& comm) {
  constexpr bool device_build =
      !Kokkos::SpaceAccessibility<Kokkos::HostSpace, Kokkos::DefaultExecutionSpace::memory_space>::accessible;
  TransportBuild build{device_build, impl::nccl_compiled(), impl::mpi_is_gpu_aware(), {}};
  // Whether libnccl.so.2 loads on every rank, where NCCL may be chosen (the same condition on every rank:
  // a collective). A rank without it is named.
  if (build.nccl_compiled && (options.kind == "nccl" || (options.kind == "auto" && device_build && comm.size() > 1))) {
    build.nccl_missing = nccl_missing_on_any_rank(comm);
  }
  // Every rank's GPU, gathered (collective on every rank alike: device_build is a constant, the kind the
  // same deck value everywhere), so that every rank reaches the same choice.
  std::vector<DeviceInfo> devices;
  DeviceReport report;
  const bool need_devices = device_build && (options.kind == "nccl" || (options.kind == "auto" && comm.size() > 1));
  if (need_devices) {
    devices = gather_devices(comm);
    report = analyse_devices(devices);
  }
  const TransportChoice choice = choose_transport(options.kind, comm.size(), build, need_devices ? &report : nullptr);
  std::unique_ptr<Transport> t;
  if (choice.kind == "nccl") {
    // Device batches on the caller's stream; host batches (checkpoint records) over MPI inside it.
    // force_staging has no meaning here: NCCL never stages.
    t = impl::make_transport_nccl(comm, devices[static_cast<std::size_t>(comm.rank())].gpu, options.route_self,
                                  nccl_timeout(options, comm));
  } else if (choice.kind == "mpi") {
    t = std::make_unique<impl::TransportMpi>(comm, Accepts::either, options.route_self);
    if (options.force_staging) t = std::make_unique<StagedTransport>(std::move(t), true);
  } else {
    // Host batches pass straight through the wrapper; device batches are staged.
    t = std::make_unique<StagedTransport>(std::make_unique<impl::TransportMpi>(comm, Accepts::host, options.route_self),
                                          options.force_staging);
  }
  t->set_choice(choice.why);
  return t;
}

std::unique_ptr<Transport> make_transport(const std::string& kind, const Communicator& comm) {
  TransportOptions options;
  options.kind = kind;
  // Test hook: SPOTRUN_TEST_ROUTE_SELF=1 sends messages to this rank itself through the transport in a
  // whole run (tools/gpu-check.sh runs NCCL at one rank so).
  const char* route = std::getenv("SPOTRUN_TEST_ROUTE_SELF");
  options.route_self = route && std::string(route) == "1";
  return make_transport(options, comm);
}

}  // namespace spotrun::comm
