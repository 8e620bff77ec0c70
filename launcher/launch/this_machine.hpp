#pragma once
// What `spotrun launch` asks of the machine it runs on: the clock, its host name and cores, files it reads
// whole, programs it finds, processes and locks of this machine (launcher/launch/, docs/layout.md).
#include <string>
#include <vector>

#include "io/child_process.hpp"

namespace spotrun::launcher::impl {

double now_unix();
std::string utc(double t);
std::string this_host();
// "1 attempt", "3 attempts".
std::string plural(long long n, const std::string& word);
// A text file of at most max_bytes that must be a regular file; throws InputError naming `what`.
std::string read_regular_file(const std::string& path, const std::string& what, std::size_t max_bytes);
bool executable(const std::string& path);
// This program (/proc/self/exe), or "" when it cannot be told.
std::string self_executable();
// mpirun: `given` (--mpirun), else the one next to spotrun (a bundle's), else the first on PATH; "" if none.
std::string find_mpirun(const std::string& given);
int local_cores();
// "exit 3", "killed by signal 9", "ended", for a status of waitpid.
std::string describe_wait(int status);

// Whether process `pid` of this host has ended (gone, or a zombie: its files and locks are released).
bool process_gone(long long pid);
// Whether some process holds the run lock of OUTDIR (launcher/run/output_lock.hpp).
bool run_lock_held(const std::string& outdir);
// Sends SIGKILL to every process of this machine whose environment holds `entry` (NAME=VALUE, exactly);
// returns how many. Processes that cannot be read (gone, another user's) are skipped.
int kill_local_processes_with(const std::string& entry);
// Starts argv[0] (an absolute path) as `spotrun launch` starts every child (io::spawn_with_pipes): in a
// process group of its own, stdin from /dev/null, stdout and stderr into pipes (one pipe: `merge_stderr`),
// with `env` (NAME=VALUE) added; `parent_death_signal` is sent to it if this process dies (so a job does
// not outlive its supervisor unwatched). A program that cannot be run exits 127 with
// "spotrun launch: cannot run ARGV0: REASON" on its stderr.
io::SpawnedChild start_child(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                             bool merge_stderr, int parent_death_signal);

// The output directory's supervisor lock: one launch per output directory. The descriptor, or -1 and `error`.
int take_launch_lock(const std::string& outdir, std::string& error);

}  // namespace spotrun::launcher::impl
