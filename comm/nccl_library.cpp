// Loading NCCL at run time (nccl_library.hpp). With SPOTRUN_HAVE_NCCL (NCCL's header found at
// configure time) the functions are looked up through comm::SharedLibrary (shared_library.hpp); without,
// nothing is ever loaded.
#include "nccl_library.hpp"

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "errors.hpp"
#include "shared_library.hpp"

#if defined(SPOTRUN_HAVE_NCCL)
#include "nccl_api.hpp"
#endif

namespace spotrun::comm {

#if defined(SPOTRUN_HAVE_NCCL)

namespace {

// Opens `soname` and fills `api`; on failure returns the reason (and closes what it opened), else "" and
// the library in `lib`.
std::string open_nccl(const char* soname, NcclApi& api, SharedLibrary& lib) {
  lib = SharedLibrary::open(soname);
  if (!lib.loaded()) return std::string("the NCCL library ") + soname + " cannot be loaded (" + lib.error() + ")";
  std::string missing;
  lib.look_up(api.GetVersion, "ncclGetVersion", missing);
  lib.look_up(api.GetErrorString, "ncclGetErrorString", missing);
  lib.look_up(api.GetLastError, "ncclGetLastError", missing);
  lib.look_up(api.GetUniqueId, "ncclGetUniqueId", missing);
  lib.look_up(api.CommInitRankConfig, "ncclCommInitRankConfig", missing);
  lib.look_up(api.CommGetAsyncError, "ncclCommGetAsyncError", missing);
  lib.look_up(api.CommFinalize, "ncclCommFinalize", missing);
  lib.look_up(api.CommDestroy, "ncclCommDestroy", missing);
  lib.look_up(api.CommAbort, "ncclCommAbort", missing);
  lib.look_up(api.GroupStart, "ncclGroupStart", missing);
  lib.look_up(api.GroupEnd, "ncclGroupEnd", missing);
  lib.look_up(api.Send, "ncclSend", missing);
  lib.look_up(api.Recv, "ncclRecv", missing);
  lib.look_up(api.AllReduce, "ncclAllReduce", missing);
  if (!missing.empty()) {
    lib = SharedLibrary();
    return std::string("the NCCL library ") + soname + " lacks " + missing + " (NCCL 2.14 or newer is needed)";
  }
  return {};
}

std::string version_of(const NcclApi& api) {
  int v = 0;
  if (api.GetVersion(&v) != ncclSuccess) return "?";
  // Since NCCL 2.9: major * 10000 + minor * 100 + patch.
  return std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." + std::to_string(v % 100);
}

NcclApi g_api;
NcclLibrary g_library;
std::once_flag g_once;

void load_once() {
  SharedLibrary lib;
  g_library.error = open_nccl(k_nccl_library, g_api, lib);
  g_library.loaded = g_library.error.empty();
  if (g_library.loaded) {
    g_library.version = version_of(g_api);
    lib.keep();  // open for the rest of the process
  }
}

}  // namespace

const NcclLibrary& nccl_library() {
  std::call_once(g_once, load_once);
  return g_library;
}

NcclLibrary probe_nccl_library(const char* soname) {
  NcclApi api;
  SharedLibrary lib;
  NcclLibrary out;
  out.error = open_nccl(soname, api, lib);
  out.loaded = out.error.empty();
  if (out.loaded) out.version = version_of(api);
  return out;  // the library closes with `lib`
}

const NcclApi& nccl_api() {
  const NcclLibrary& lib = nccl_library();
  if (!lib.loaded) throw InputError(lib.error);
  return g_api;
}

std::string nccl_reason(ncclResult_t r, ncclComm_t comm) {
  std::string s = nccl_api().GetErrorString(r);
  const char* last = nccl_api().GetLastError(comm);
  if (last && *last) s += std::string(" (") + last + ")";
  return s;
}

std::string nccl_async_failure(ncclComm_t comm) {
  ncclResult_t async = ncclSuccess;
  const ncclResult_t q = nccl_api().CommGetAsyncError(comm, &async);
  if (q != ncclSuccess) return "ncclCommGetAsyncError failed: " + nccl_reason(q, comm);
  if (async != ncclSuccess && async != ncclInProgress) return "asynchronous NCCL error: " + nccl_reason(async, comm);
  return {};
}

std::string nccl_settle(ncclResult_t r, ncclComm_t comm, const char* call, double timeout_s) {
  const auto start = std::chrono::steady_clock::now();
  for (long polls = 0; r == ncclInProgress; ++polls) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout_s)
      return std::string(call) + " did not complete within " + std::to_string(static_cast<long>(timeout_s)) +
             " s (SPOTRUN_NCCL_TIMEOUT): a peer rank is stuck or gone";
    if (polls < 1000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    const ncclResult_t q = nccl_api().CommGetAsyncError(comm, &r);
    if (q != ncclSuccess) return std::string("ncclCommGetAsyncError (after ") + call + ") failed: " + nccl_reason(q, comm);
  }
  if (r != ncclSuccess) return std::string(call) + " failed: " + nccl_reason(r, comm);
  return {};
}

#else

namespace {
NcclLibrary not_compiled() {
  NcclLibrary out;
  out.error = "NCCL is not compiled in";
  return out;
}
}  // namespace

const NcclLibrary& nccl_library() {
  static const NcclLibrary none = not_compiled();
  return none;
}

NcclLibrary probe_nccl_library(const char*) { return not_compiled(); }

#endif

std::string nccl_missing_on_any_rank(const Communicator& comm) {
  const NcclLibrary& lib = nccl_library();
  const std::vector<std::string> all = comm.all_gather(lib.loaded ? std::string() : lib.error);
  for (std::size_t r = 0; r < all.size(); ++r)
    if (!all[r].empty()) return "rank " + std::to_string(r) + ": " + all[r];
  return {};
}

}  // namespace spotrun::comm
