// Compiled instead of transport_nccl.cpp when NCCL is not found: the factory links everywhere and refuses
// comm.transport = "nccl" (choose_transport says so before this is reached).
#include "transport_nccl.hpp"

#include "../errors.hpp"

namespace spotrun::comm::impl {

bool nccl_compiled() { return false; }

std::string nccl_version() { return {}; }

std::unique_ptr<Transport> make_transport_nccl(const Communicator&, int, bool, double) {
  throw InputError("comm.transport = \"nccl\": NCCL is not compiled in (spotrun was configured without NCCL)");
}

}  // namespace spotrun::comm::impl
