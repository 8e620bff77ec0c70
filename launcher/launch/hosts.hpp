#pragma once
// The hosts of `spotrun launch`: Open MPI hostfiles (or what --hosts-command prints), the ranks placed on
// them, and host names as mpirun reports them (pure functions, tested in tests/test_launch.cpp).
#include <string>
#include <vector>

namespace spotrun::launcher {

// One line of an Open MPI hostfile: "HOST [slots=N] [max_slots=M]".
struct HostEntry {
  std::string name;
  int slots = 0;  // 0: not given (the host's cores, as its probe reports them)
};

// Parses an Open MPI hostfile (comments after '#', one host per line, a host named twice adds its
// slots). Throws InputError naming `name`, the line and the problem, or when it names no host.
std::vector<HostEntry> parse_hostfile(const std::string& text, const std::string& name);

struct Placement {
  std::string host;
  int ranks = 0;
};
// Places min(wanted, total capacity) ranks (wanted <= 0: the whole capacity) on the hosts in order,
// filling each up to its capacity, as Open MPI maps by slot. Hosts that get no rank are left out.
std::vector<Placement> plan_ranks(const std::vector<Placement>& capacity, int wanted);

// Whether the host mpirun names in a message (a short host name, without the domain unless Open MPI
// keeps it) is hostfile entry `entry`; `self`: this machine's host name, which loopback entries
// (localhost, 127.0.0.1, ::1) stand for.
bool same_host(const std::string& entry, const std::string& reported, const std::string& self);

namespace impl {

// localhost, 127.0.0.1, ::1.
bool loopback(const std::string& host);

// The hosts `command` prints (/bin/sh -c, stdout as a hostfile; at most `timeout` seconds, 1 MiB); throws
// InputError naming the command and what it must print.
std::vector<HostEntry> hosts_from_command(const std::string& command, double timeout);

}  // namespace impl
}  // namespace spotrun::launcher
