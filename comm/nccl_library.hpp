#pragma once
// NCCL is loaded at run time (dlopen of libnccl.so.2, every function through dlsym), not linked: spotrun
// starts on a node without NCCL, where comm.transport = "auto" takes MPI and says so, and an explicit
// "nccl" is refused (exit 2) naming the missing library (docs/gpu.md, "NCCL at run time"). This header
// needs no nccl.h; the function table is in nccl_api.hpp, for the code that calls NCCL.
#include <string>

#include "communicator.hpp"

namespace spotrun::comm {

// The library spotrun loads (NCCL 2.x's soname), found as the dynamic loader finds any library
// (LD_LIBRARY_PATH, the loader's cache, ...).
inline constexpr const char* k_nccl_library = "libnccl.so.2";

struct NcclLibrary {
  bool loaded = false;
  std::string version;  // "2.28.9" once loaded
  std::string error;    // why not loaded: "NCCL is not compiled in", or the loader's reason naming the file
};

// Whether the NCCL functions of this build can be called: compiled in, and k_nccl_library loaded with
// every function spotrun calls. Loads on the first call (thread-safe), then answers from memory.
const NcclLibrary& nccl_library();

// Why NCCL cannot be used by every rank of `comm`, naming the lowest rank without it ("rank 3: the NCCL
// library libnccl.so.2 cannot be loaded (...)"), or "" when it loads on all. Collective.
std::string nccl_missing_on_any_rank(const Communicator& comm);

// Loads `soname` and looks up every function as nccl_library() does, then unloads it; the answer is not
// kept (tests try names that do not exist).
NcclLibrary probe_nccl_library(const char* soname);

}  // namespace spotrun::comm
