// spotrun-test: spotrun (launcher/cli.cpp) with the test hooks of comm/test_hooks.hpp installed from its
// environment, for the command-line tests that need them. Built with the tests only; spotrun itself
// installs no hook and reads none of these variables. A variable that is not set installs nothing: then
// spotrun-test is spotrun. Each is read once, at the start of the process (so by every rank of an mpirun
// and every process `spotrun-test launch` starts, which run spotrun-test too: /proc/self/exe).
//   SPOTRUN_TEST_HOST_NAME=NAME         comm::host_name() is NAME (several "hosts" on one machine)
//   SPOTRUN_TEST_ROUTE_SELF=1           every transport sends to this rank itself through the transport too
//   SPOTRUN_TEST_PAUSE=PHASE=SECONDS    sleep SECONDS on entering PHASE (a phase of set_signal_mode), or
//                                       until a stop signal arrives, so that a test signals it there
//   SPOTRUN_TEST_CHECKPOINT_WRITE_PAUSE=STEP=SECONDS
//                                       every rank sleeps SECONDS in the write of the checkpoint of STEP,
//                                       its file half written
//   SPOTRUN_TEST_FORCE_SLOWDOWN=N       the MD pair-force kernel runs N times per evaluation (the planted
//                                       slowdown of bench.suite_regression; same results)
//   SPOTRUN_TEST_DMI_DIR=DIR            the spot notices read the cloud provider from DIR, not /sys/class/dmi/id
//   SPOTRUN_TEST_GPU_CPUS=LIST[;LIST..] the CPUs near the GPU of node-local rank r are the (r mod n)-th
//                                       LIST (hwloc's list syntax, "0-3,8"), on any build: the CPU binding
//                                       near GPUs (comm/cpu_binding.hpp) on a machine without one
//   SPOTRUN_TEST_DEVICE_RULES=1         transports and FFT backends chosen by a device build's rules
//                                       (comm::device_rules()) on a host build
//   SPOTRUN_DOCTOR_SLOW_RANK=N          spotrun doctor measures rank N's CPU figures slowed down (its name
//                                       is older than spotrun-test: the doctor's tests set it)
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "comm/test_hooks.hpp"
#include "launcher/cli.hpp"
#include "launcher/run/stop.hpp"

namespace {

const char* variable(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// Sleeps `seconds`, or less when a stop signal arrives (spotrun records it and acts on it later).
void sleep_unless_stopped(double seconds) {
  struct timespec left {static_cast<time_t>(seconds), static_cast<long>((seconds - static_cast<time_t>(seconds)) * 1e9)};
  while (::nanosleep(&left, &left) != 0 && errno == EINTR && spotrun::launcher::received_signal() == 0) {
  }
}

spotrun::comm::TestHooks hooks_from_environment() {
  spotrun::comm::TestHooks hooks;
  if (const char* name = variable("SPOTRUN_TEST_HOST_NAME")) hooks.host_name = [host = std::string(name)] { return host; };
  if (const char* route = variable("SPOTRUN_TEST_ROUTE_SELF"); route && std::string(route) == "1")
    hooks.route_self = [] { return true; };
  if (const char* spec = variable("SPOTRUN_TEST_PAUSE")) {
    const char* eq = std::strrchr(spec, '=');
    if (eq) {
      hooks.phase_entered = [phase = std::string(spec, eq), seconds = std::atof(eq + 1)](const char* entered) {
        if (phase != entered) return;
        std::fprintf(stderr, "spotrun: pausing %g s in phase '%s' (SPOTRUN_TEST_PAUSE)\n", seconds, entered);
        std::fflush(stderr);
        sleep_unless_stopped(seconds);
      };
    }
  }
  if (const char* spec = variable("SPOTRUN_TEST_CHECKPOINT_WRITE_PAUSE")) {
    long long step = -1;
    double seconds = 0;
    if (std::sscanf(spec, "%lld=%lf", &step, &seconds) == 2 && seconds > 0) {
      hooks.checkpoint_half_written = [step, seconds](long long written, const std::string& path) {
        if (written != step) return;
        std::fprintf(stderr, "spotrun: pausing %g s in the write of %s (SPOTRUN_TEST_CHECKPOINT_WRITE_PAUSE)\n", seconds,
                     path.c_str());
        std::fflush(stderr);
        ::usleep(static_cast<useconds_t>(seconds * 1e6));  // a signal ends it early
      };
    }
  }
  if (const char* text = variable("SPOTRUN_TEST_FORCE_SLOWDOWN")) {
    const int n = std::max(1, std::atoi(text));
    if (n > 1) {
      hooks.force_passes = [n, warned = false]() mutable {
        if (!warned)
          std::fprintf(stderr, "Warning: SPOTRUN_TEST_FORCE_SLOWDOWN=%d: the force kernel runs %d times per evaluation (a test hook)\n",
                       n, n);
        warned = true;
        return n;
      };
    }
  }
  if (const char* dir = variable("SPOTRUN_TEST_DMI_DIR")) hooks.dmi_directory = [d = std::string(dir)] { return d; };
  if (const char* lists = variable("SPOTRUN_TEST_GPU_CPUS")) {
    std::vector<std::string> near(1);
    for (const char* p = lists; *p; ++p) {
      if (*p == ';')
        near.emplace_back();
      else
        near.back() += *p;
    }
    hooks.gpu_cpus = [near](int local_rank) { return near[static_cast<std::size_t>(local_rank) % near.size()]; };
  }
  if (const char* rules = variable("SPOTRUN_TEST_DEVICE_RULES"); rules && std::string(rules) == "1")
    hooks.device_rules = [] { return true; };
  if (const char* rank = variable("SPOTRUN_DOCTOR_SLOW_RANK")) hooks.doctor_slow_rank = [r = std::string(rank)] { return r; };
  return hooks;
}

}  // namespace

int main(int argc, char** argv) {
  spotrun::comm::set_test_hooks(hooks_from_environment());
  return spotrun::launcher::command_line_main(argc, argv);
}
