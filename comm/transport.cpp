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
#include "test_hooks.hpp"
#include "transport_registry.hpp"

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

namespace {

// options.nccl_timeout_s, else options.nccl_timeout (SPOTRUN_NCCL_TIMEOUT: seconds > 0), else the default;
// the same verdict on every rank.
double nccl_timeout(const TransportOptions& options, const Communicator& comm) {
  if (options.nccl_timeout_s > 0) return options.nccl_timeout_s;
  const std::string& text = options.nccl_timeout;
  double seconds = 300;
  bool ok = true;
  if (!text.empty()) {
    char* end = nullptr;
    seconds = std::strtod(text.c_str(), &end);
    ok = end && *end == '\0' && seconds > 0 && std::isfinite(seconds);
  }
  comm.agree<InputError>(ok, "SPOTRUN_NCCL_TIMEOUT='" + text + "' is not a number of seconds > 0");
  return seconds;
}

// ---- the built-in transports: one entry each ---------------------------------------------------------------

std::string nccl_unavailable(const TransportBuild& build, int, const DeviceReport* devices) {
  if (!build.nccl_compiled)
    return "comm.transport = \"nccl\": NCCL is not compiled in (spotrun was configured without NCCL; "
           "see docs/gpu.md): use \"auto\", \"mpi\" or \"mpi-host\"";
  if (!build.nccl_missing.empty())
    return "comm.transport = \"nccl\": " + build.nccl_missing + "; install NCCL 2 where the dynamic "
           "loader finds it (LD_LIBRARY_PATH), or use \"auto\", \"mpi\" or \"mpi-host\"";
  if (!build.device_build)
    return "comm.transport = \"nccl\" needs a CUDA build: this build's Kokkos keeps the data in host memory; "
           "use \"auto\" or \"mpi\"";
  if (!devices->nccl_refusal.empty())
    return "comm.transport = \"nccl\": " + devices->nccl_refusal +
           "; NCCL needs a GPU of its own for every rank (\"Duplicate GPU detected\"): start one rank per "
           "GPU, or use \"auto\" or \"mpi\"";
  return "";
}
std::unique_ptr<Transport> make_nccl(const Communicator& comm, const TransportOptions& options,
                                     const std::vector<DeviceInfo>& devices) {
  // Device batches on the caller's stream; host batches (checkpoint records) over MPI inside it.
  // force_staging has no meaning here: NCCL never stages.
  return impl::make_transport_nccl(comm, devices[static_cast<std::size_t>(comm.rank())].gpu, options.route_self,
                                   nccl_timeout(options, comm));
}

std::string mpi_unavailable(const TransportBuild& build, int, const DeviceReport*) {
  if (build.device_build && !build.mpi_gpu_aware)
    return "comm.transport = \"mpi\" needs an MPI library that takes device memory (GPU-aware); this "
           "one does not: use \"mpi-host\" or \"auto\"";
  return "";
}
std::unique_ptr<Transport> make_mpi(const Communicator& comm, const TransportOptions& options,
                                    const std::vector<DeviceInfo>&) {
  std::unique_ptr<Transport> t = std::make_unique<impl::TransportMpi>(comm, Accepts::either, options.route_self);
  if (options.force_staging) t = std::make_unique<StagedTransport>(std::move(t), true);
  return t;
}

std::string always_available(const TransportBuild&, int, const DeviceReport*) { return ""; }
std::unique_ptr<Transport> make_mpi_host(const Communicator& comm, const TransportOptions& options,
                                         const std::vector<DeviceInfo>&) {
  // Host batches pass straight through the wrapper; device batches are staged.
  return std::make_unique<StagedTransport>(std::make_unique<impl::TransportMpi>(comm, Accepts::host, options.route_self),
                                           options.force_staging);
}

struct Registry {
  std::vector<TransportRegistration> entries{
      {"mpi", mpi_unavailable, make_mpi, false},
      {"mpi-host", always_available, make_mpi_host, false},
      {"nccl", nccl_unavailable, make_nccl, true},
  };
  std::vector<std::string> kinds;  // "auto" and every name, in registration order
  Registry() { update_kinds(); }
  void update_kinds() {
    kinds = {"auto"};
    for (const auto& e : entries) kinds.push_back(e.name);
  }
};
Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

bool register_transport(TransportRegistration registration) {
  auto& r = registry();
  if (registration.name.empty() || registration.name == "auto" || find_transport(registration.name))
    throw std::logic_error("register_transport: the name '" + registration.name + "' is empty, \"auto\" or taken");
  if (!registration.unavailable || !registration.make)
    throw std::logic_error("register_transport('" + registration.name + "'): unavailable() and make() are required");
  r.entries.push_back(std::move(registration));
  r.update_kinds();
  return true;
}

const TransportRegistration* find_transport(const std::string& name) {
  for (const auto& e : registry().entries)
    if (e.name == name) return &e;
  return nullptr;
}

const std::vector<std::string>& transport_kinds() { return registry().kinds; }

TransportChoice choose_transport(const std::string& kind, int ranks, const TransportBuild& build,
                                 const DeviceReport* devices) {
  const TransportRegistration* entry = kind == "auto" ? nullptr : find_transport(kind);
  if (kind != "auto" && !entry) {
    std::string allowed;
    for (const auto& k : transport_kinds()) allowed += (allowed.empty() ? "\"" : ", \"") + k + "\"";
    throw InputError("comm.transport '" + kind + "' is not known; allowed: " + allowed);
  }
  const bool need_devices = build.device_build && (entry ? entry->needs_devices : ranks > 1);
  if (need_devices && !devices) throw std::logic_error("choose_transport: the devices are needed on a device build");
  if (entry) {
    const std::string why = entry->unavailable(build, ranks, need_devices ? devices : nullptr);
    if (!why.empty()) throw InputError(why);
    return {kind, ""};
  }
  // "auto": the best of the built-in transports the build and the run allow.
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

bool device_rules() {
  constexpr bool device_build =
      !Kokkos::SpaceAccessibility<Kokkos::HostSpace, Kokkos::DefaultExecutionSpace::memory_space>::accessible;
  if (device_build) return true;
  const auto& hook = test_hooks().device_rules;
  return hook && hook();
}

std::unique_ptr<Transport> make_transport(const TransportOptions& options, const Communicator& comm) {
  // The same answer on every rank: a constant, or a hook every rank of a test program installs alike.
  const bool device_build = device_rules();
  TransportBuild build{device_build, impl::nccl_compiled(), impl::mpi_is_gpu_aware(), {}};
  // Whether libnccl.so.2 loads on every rank, where NCCL may be chosen (the same condition on every rank:
  // a collective). A rank without it is named.
  if (build.nccl_compiled && (options.kind == "nccl" || (options.kind == "auto" && device_build && comm.size() > 1))) {
    build.nccl_missing = nccl_missing_on_any_rank(comm);
  }
  // Every rank's GPU, gathered (collective on every rank alike: device_build is the same everywhere, the kind the
  // same deck value everywhere), so that every rank reaches the same choice.
  const TransportRegistration* asked = options.kind == "auto" ? nullptr : find_transport(options.kind);
  std::vector<DeviceInfo> devices;
  DeviceReport report;
  const bool need_devices = device_build && (asked ? asked->needs_devices : options.kind == "auto" && comm.size() > 1);
  if (need_devices) {
    devices = gather_devices(comm);
    report = analyse_devices(devices);
  }
  const TransportChoice choice = choose_transport(options.kind, comm.size(), build, need_devices ? &report : nullptr);
  std::unique_ptr<Transport> t = find_transport(choice.kind)->make(comm, options, devices);
  t->set_choice(choice.why);
  return t;
}

std::unique_ptr<Transport> make_transport(const std::string& kind, const Communicator& comm,
                                          const std::string& nccl_timeout) {
  TransportOptions options;
  options.kind = kind;
  options.nccl_timeout = nccl_timeout;
  // Test hook: messages to this rank itself through the transport in a whole run (comm/test_hooks.hpp;
  // tools/gpu-check.sh runs NCCL at one rank so).
  if (const auto& hook = test_hooks().route_self) options.route_self = hook();
  return make_transport(options, comm);
}

}  // namespace spotrun::comm
