#pragma once
// The transport interface: moves the bytes of one exchange between ranks, in one call. It knows nothing
// about atoms or fields: plans say what goes where, movers pack and unpack with Kokkos kernels in the
// memory space of the data, and the transport moves the packed buffers (docs/comm.md):
//
//   plan (once per rebuild) -> pack (kernel) -> transport.exchange(batch) -> unpack (kernel)
//
// Backends live in impl/, one file each: MPI on host buffers (mpi-host; device data is staged through
// host memory by the one staging wrapper in staging.hpp), MPI given the data where it lies (mpi:
// GPU-aware MPI on a device build), and NCCL on the caller's CUDA stream (nccl: one GPU per rank).
#include <cstddef>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "communicator.hpp"
#include "device.hpp"

namespace spotrun::comm {

// Where the buffers of an exchange live.
enum class Memory { host, device };
// Which buffers a transport can move.
enum class Accepts { host, device, either };
inline bool accepts_memory(Accepts a, Memory m) {
  return a == Accepts::either || (a == Accepts::host ? m == Memory::host : m == Memory::device);
}

// Every message of one exchange. Between two ranks, the k-th send of one to the other matches the k-th
// receive of the other from it (the same order on both sides); sizes must agree (a plan exchanges
// counts first). A message to or from this rank itself is allowed (a periodic image in a dimension of
// one rank); movers usually copy those locally instead (see Transport::route_self()).
struct Message {
  int peer = 0;
  void* data = nullptr;  // read for a send, written for a receive
  std::size_t bytes = 0;
};
struct Batch {
  Memory memory = Memory::host;  // where every buffer of the batch lives
  std::vector<Message> sends, recvs;

  void clear() {
    sends.clear();
    recvs.clear();
  }
  void send(int peer, const void* data, std::size_t bytes) { sends.push_back({peer, const_cast<void*>(data), bytes}); }
  void recv(int peer, void* data, std::size_t bytes) { recvs.push_back({peer, data, bytes}); }
  std::size_t send_bytes() const;
  std::size_t recv_bytes() const;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // "mpi", "mpi-host", "nccl": the value of comm.transport that makes this transport.
  virtual std::string name() const = 0;
  // One line for the run header: the backend and the memory it moves ("MPI, host buffers"), and why
  // comm.transport = "auto" chose it when that is not plain (with_choice()).
  virtual std::string description() const = 0;
  virtual Accepts accepts() const = 0;
  // True when exchange() is ordered on the caller's device stream (NCCL): the caller need not wait for
  // its packing kernels first. False: the caller fences before exchange() (comm::exchange does).
  virtual bool stream_ordered() const { return false; }
  // Whether messages from a rank to itself go through exchange() too (a test option, so that a one-rank
  // run exercises the real send and receive code); otherwise movers copy them locally.
  virtual bool route_self() const { return false; }
  // Posts every message of the batch and returns when all have been sent and received. `stream`: the
  // native stream (cudaStream_t) of the execution-space instance that wrote the buffers, or nullptr.
  // Collective among the peers of the batch. Throws std::runtime_error naming the failing call.
  virtual void exchange(const Batch& batch, void* stream = nullptr) = 0;
  // The same exchange in halves, so that the caller can compute while its messages move (the MD halo
  // hidden behind the pair loop, docs/comm.md): post() starts every message of the batch and returns;
  // complete() returns when all have been sent and received (the buffers may then be read and reused);
  // test() says without waiting whether they have (and helps the library move them). One posted batch at
  // a time: post() is followed by complete() before the next post() or exchange(), and the buffers are
  // left alone in between. The default posts by exchanging at once (a transport with nothing to overlap);
  // MPI posts MPI_Irecv/MPI_Isend and waits in complete(); NCCL is ordered on the stream anyway.
  virtual void post(const Batch& batch, void* stream = nullptr) { exchange(batch, stream); }
  virtual bool test() { return true; }
  virtual void complete() {}
  // Completes every exchange posted so far and reports a failure of any: a stream-ordered transport
  // (NCCL) returns from exchange() before its messages have moved, so its errors (a peer rank gone, an
  // asynchronous NCCL error) surface here, or at the next exchange(). Throws std::runtime_error naming
  // the failure. The launcher calls it before output and checkpoints and at the end of the time loop.
  // Transports that complete every exchange in exchange() need nothing here.
  virtual void fence() {}
  // On an error path, before anything frees the device memory the transport may still be moving (the
  // solver's views): stops every exchange now and for good (NCCL: ncclCommAbort). No-op for transports
  // that complete every exchange in exchange(). Never throws; later calls fail.
  virtual void abort() noexcept {}

  // Bytes this transport has staged between device and host memory so far (0 for a transport that
  // never stages), for the run summary's host-copy figures.
  virtual std::size_t staged_bytes() const { return 0; }

  // Why make_transport() chose this transport for comm.transport = "auto" when that is worth saying (the
  // fallback from NCCL and its cause); appended to description().
  void set_choice(std::string why) { m_choice = std::move(why); }

 protected:
  std::string with_choice(const std::string& description) const {
    return m_choice.empty() ? description : description + ": " + m_choice;
  }

 private:
  std::string m_choice;
};

// Whether `transport` only queues the batch on the device stream (NCCL given device buffers): its packing
// kernels need no fence first, and its messages have not moved when exchange() or post() returns.
inline bool stream_queued(const Transport& transport, const Batch& batch) {
  return transport.stream_ordered() && batch.memory == Memory::device;
}

// Calls transport.abort() when an exception unwinds past it. Declared after the solver's owner (and so
// destroyed before it), it stops NCCL before the solver's device memory is freed.
class AbortOnUnwind {
 public:
  explicit AbortOnUnwind(Transport& transport) : m_transport(transport), m_uncaught(std::uncaught_exceptions()) {}
  ~AbortOnUnwind() {
    if (std::uncaught_exceptions() > m_uncaught) m_transport.abort();
  }
  AbortOnUnwind(const AbortOnUnwind&) = delete;
  AbortOnUnwind& operator=(const AbortOnUnwind&) = delete;

 private:
  Transport& m_transport;
  int m_uncaught;
};

struct TransportOptions {
  std::string kind = "auto";  // "auto", "mpi", "mpi-host", "nccl"
  bool route_self = false;    // tests: messages to this rank itself go through the transport
  bool force_staging = false; // tests: stage through host buffers even when the data is host memory
  // nccl: seconds an exchange, or NCCL's set-up, may wait for its peers before the transport gives up
  // (aborts the NCCL communicator and throws). 0: nccl_timeout, else 300.
  double nccl_timeout_s = 0;
  // nccl: the same as text, SPOTRUN_NCCL_TIMEOUT as the program read it from its environment
  // (launcher::Environment); "" = unset. Checked when an NCCL transport is made: a number of seconds > 0,
  // else InputError on every rank.
  std::string nccl_timeout;
};

// Whether transports and FFT backends are chosen by the rules of a device build: on a device (CUDA) build,
// and on a host build where a test program installed TestHooks::device_rules (test_hooks.hpp). spotrun
// itself never installs it.
bool device_rules();

// The kinds make_transport() knows, for messages and the deck schema (comm.transport's choices).
const std::vector<std::string>& transport_kinds();
// Makes the transport of `options.kind`. Collective. A host build under device_rules() decides as a device
// build would (device_build in TransportBuild), and so moves its host data with the transport that build
// would choose. "auto" picks the best the build and the run allow:
// at one rank, where every halo is a local copy, MPI (given device memory only when MPI is GPU-aware)
// and never NCCL; on a host build MPI on the data where it lies; on a CUDA build NCCL when it is compiled
// in and every rank has a GPU of its own (device.hpp), else MPI given device memory when MPI is
// GPU-aware, else MPI on host buffers with staging; description() says why. NCCL is loaded at run time
// (nccl_library.hpp): where libnccl.so.2 is missing on some rank, "auto" falls back to MPI and says so.
// Throws InputError (on every rank) for an unknown kind or one this build, MPI library, NCCL library or
// set of GPUs cannot provide.
std::unique_ptr<Transport> make_transport(const TransportOptions& options, const Communicator& comm);
// The same for `kind`, the NCCL timeout `nccl_timeout` (TransportOptions::nccl_timeout) and the test hook
// route_self where one is installed (test_hooks.hpp).
std::unique_ptr<Transport> make_transport(const std::string& kind, const Communicator& comm,
                                          const std::string& nccl_timeout = "");

// What make_transport() decides, apart from the collectives that gather its inputs (tested with made-up
// builds and devices).
struct TransportBuild {
  bool device_build = false;   // Kokkos' default memory space is not host-accessible (CUDA)
  bool nccl_compiled = false;  // the nccl transport is compiled in
  bool mpi_gpu_aware = false;  // MPI takes device pointers (impl::mpi_is_gpu_aware())
  // Why the NCCL library cannot be used (nccl_library.hpp: not loadable on some rank, named); empty when
  // it loads on every rank, or when make_transport() did not need to know.
  std::string nccl_missing;
};
struct TransportChoice {
  std::string kind;  // "mpi", "mpi-host" or "nccl"
  std::string why;   // for Transport::set_choice(); empty when there is nothing to explain
};
// ranks: the size of the run. devices: the analysis of every rank's GPU (analyse_devices); needed on a
// device build for "nccl", and for "auto" at two ranks or more; ignored otherwise. Throws InputError as
// make_transport() does.
TransportChoice choose_transport(const std::string& kind, int ranks, const TransportBuild& build,
                                 const DeviceReport* devices);

}  // namespace spotrun::comm
