#pragma once
// NCCL backend of the transport (docs/comm.md, "The NCCL transport"): one NCCL communicator per run, one
// ncclGroupStart / ncclSend / ncclRecv per message / ncclGroupEnd per exchange on the caller's CUDA
// stream. The class lives in transport_nccl.cpp, so that only that file sees nccl.h; without NCCL,
// transport_nccl_stub.cpp provides these functions and the factory refuses "nccl".
#include <memory>
#include <string>

#include "../transport.hpp"

namespace spotrun::comm::impl {

// Whether the nccl transport is compiled into this build.
bool nccl_compiled();
// The NCCL library's version at run time ("2.28.9"); "" when not compiled in.
std::string nccl_version();

// Makes the NCCL transport on CUDA device `device` (the one Kokkos runs on). Collective over comm: rank
// 0 makes the ncclUniqueId, MPI broadcasts it, every rank initialises its NCCL rank; a failure on any
// rank throws RunError on every rank. timeout_s: how long an NCCL call, or an exchange not yet completed,
// may wait for its peers before the communicator is aborted. Throws InputError when not compiled in.
std::unique_ptr<Transport> make_transport_nccl(const Communicator& comm, int device, bool route_self, double timeout_s);

}  // namespace spotrun::comm::impl
