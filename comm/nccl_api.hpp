#pragma once
// The NCCL functions spotrun calls, looked up in the library nccl_library() loaded (nccl_library.hpp).
// Only for code compiled with NCCL's header (SPOTRUN_HAVE_NCCL); call as nccl_api().CommAbort(comm).
#include <nccl.h>

#include <string>

#include "nccl_library.hpp"

namespace spotrun::comm {

struct NcclApi {
  decltype(&::ncclGetVersion) GetVersion = nullptr;
  decltype(&::ncclGetErrorString) GetErrorString = nullptr;
  decltype(&::ncclGetLastError) GetLastError = nullptr;
  decltype(&::ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&::ncclCommInitRankConfig) CommInitRankConfig = nullptr;
  decltype(&::ncclCommGetAsyncError) CommGetAsyncError = nullptr;
  decltype(&::ncclCommFinalize) CommFinalize = nullptr;
  decltype(&::ncclCommDestroy) CommDestroy = nullptr;
  decltype(&::ncclCommAbort) CommAbort = nullptr;
  decltype(&::ncclGroupStart) GroupStart = nullptr;
  decltype(&::ncclGroupEnd) GroupEnd = nullptr;
  decltype(&::ncclSend) Send = nullptr;
  decltype(&::ncclRecv) Recv = nullptr;
  decltype(&::ncclAllReduce) AllReduce = nullptr;
};

// The loaded functions. Throws InputError naming the library and the loader's reason when
// nccl_library().loaded is false.
const NcclApi& nccl_api();

// NCCL's name of result r, and its last error message on `comm` (may be null) when it has one.
std::string nccl_reason(ncclResult_t r, ncclComm_t comm);

// The asynchronous error of `comm` (ncclCommGetAsyncError), described ("asynchronous NCCL error: ...",
// or "ncclCommGetAsyncError failed: ..." when the query itself fails), or "" while there is none (a
// call still in progress is none). Does not throw on an NCCL error: a watchdog thread polls it too.
std::string nccl_async_failure(ncclComm_t comm);

// Waits for a call of a non-blocking communicator (config.blocking = 0) that returned `r`: while it is
// ncclInProgress, polls ncclCommGetAsyncError (yielding first, then every 200 us) for at most `timeout_s`.
// Returns "" when the call completed, else why not: "<call> failed: <reason>", the query's own failure, or
// "<call> did not complete within N s (SPOTRUN_NCCL_TIMEOUT): a peer rank is stuck or gone". The caller
// aborts the communicator. Does not throw on an NCCL error.
std::string nccl_settle(ncclResult_t r, ncclComm_t comm, const char* call, double timeout_s);

}  // namespace spotrun::comm
