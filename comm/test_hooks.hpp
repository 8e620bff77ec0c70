// Test hooks: behaviour only a test wants (a pause in a phase, a made-up host name, a planted slowdown),
// installed by the program that runs the code. spotrun installs none: each hook is empty, and the place
// that asks for it does what it does without one (the cost: one test of an empty std::function). The test
// program `spotrun-test` (tests/support/spotrun_test_main.cpp, built with the tests only) installs them from
// its environment; a unit test sets those it needs with set_test_hooks. See docs/layout.md, "Test hooks".
#pragma once
#include <functional>
#include <string>

namespace spotrun::comm {

struct TestHooks {
  // comm::host_name(): this process's host name instead of MPI_Get_processor_name's, when it returns a
  // non-empty one (several "hosts" on one machine). Where it names the host, spot notices leave out the
  // node's IPv4 addresses (launcher/run/spot_notices.cpp).
  std::function<std::string()> host_name;
  // comm::make_transport(kind, comm): true makes every rank send its messages to itself through the
  // transport too (TransportOptions::route_self) in a whole run.
  std::function<bool()> route_self;
  // Called as the process enters a phase (launcher::set_signal_mode: "reading the deck", "inspect", ...),
  // before anything of the phase runs: a test pauses there to signal the process in that phase.
  std::function<void(const char* phase)> phase_entered;
  // Called on every rank in the write of the checkpoint of `step`, its temporary file `path` created and
  // half written (io/checkpoint_write.cpp): a test pauses there to lose a node in the write.
  std::function<void(long long step, const std::string& path)> checkpoint_half_written;
  // io::write_checkpoint's check of the free space before it writes (io/checkpoint_write.cpp): the free bytes
  // of the file system of the checkpoint's directory `dir`, instead of statvfs's; negative: not known, no
  // check (a test that fills a file system in the middle of a write). The error of a write that failed still
  // names statvfs's figure.
  std::function<long long(const std::string& dir)> checkpoint_free_bytes;
  // MD: how many times the pair-force kernel runs per force evaluation (the extra passes are discarded:
  // the same results, that many times the force work). Less than 2: once.
  std::function<int()> force_passes;
  // The DMI folder the spot notices read the provider from (cloud.provider = "auto") instead of
  // /sys/class/dmi/id, when it returns a non-empty one.
  std::function<std::string()> dmi_directory;
  // comm::bind_cpus(): the CPU list (hwloc's "0-3,8") that stands for the CPUs near the GPU of the rank of
  // this node-local rank, on any build (a CPU build has no GPU to ask); "" for none.
  std::function<std::string(int local_rank)> gpu_cpus;
  // comm::device_rules(): true makes a host build choose transports and FFT backends by the rules of a
  // device (CUDA) build: "auto" picks what a device build with this MPI and NCCL would pick, "mpi" is
  // refused where MPI is not GPU-aware, and the FFTW backend named outright is refused (the build's default
  // backend is not). The test programs install it (SPOTRUN_TEST_DEVICE_RULES=1), so that a CPU run finds
  // the tests that would fail on a GPU for their choice of transport or backend alone.
  std::function<bool()> device_rules;
  // spotrun doctor (launcher/doctor/doctor.cpp): the rank, as text, whose CPU figures are measured with every
  // timed call stretched doctor::k_slow_rank_factor times, so that the verdicts on a slow rank can be
  // tested; the doctor checks that it names a rank of the run. "" for none.
  std::function<std::string()> doctor_slow_rank;
};

// Installs `hooks` in this process, replacing those installed before. Call it before the code that asks
// (spotrun-test: first thing in main, before MPI starts); not thread-safe against a hook being read.
void set_test_hooks(TestHooks hooks);
// The hooks installed (all empty unless a program or test installed some).
const TestHooks& test_hooks();

}  // namespace spotrun::comm
