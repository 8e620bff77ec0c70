#pragma once
// Spot notices in `spotrun run` (docs/cloud.md, "Spot notices"): on the node-local rank 0 of each node a
// thread polls the metadata service of the deck's cloud.provider (io/cloud/notice_watcher.hpp); the time loop
// reads its flag and passes it to the stop agreement (launcher/run/stop.hpp, k_flag_spot_notice), so every rank
// stops at the same step, writes a checkpoint and exits 75.
#include <memory>
#include <string>
#include <vector>

#include "io/cloud/notice_watcher.hpp"
#include "comm/communicator.hpp"
#include "launcher/deck/deck.hpp"

namespace spotrun::launcher {

class SpotNotices {
 public:
  // Collective: resolves cloud.provider on each node ("auto": from the node's DMI data), starts the watcher
  // on node-local rank 0 where there is a provider, and gathers what each node does for header().
  SpotNotices(const comm::Communicator& comm, const Deck& deck);
  ~SpotNotices();
  // The run header's line: "Spot notices: aws on 2 node(s), polling http://169.254.169.254 every 5 s ...".
  const std::string& header() const { return m_header; }
  // This rank saw a notice (only a node-local rank 0 can); read by the time loop, no MPI.
  bool noticed() const { return m_watcher && m_watcher->noticed(); }
  // Collective: the notice of the lowest rank that saw one, described for the stop message ("aws: terminate
  // at 2026-11-30T12:00:00Z, 93 s from now"), the same on every rank; "" when no rank saw one.
  std::string describe(const comm::Communicator& comm) const;
  // Collective: the nodes that saw a notice, each by its host name (comm::host_name()) and, unless the test
  // hook TestHooks::host_name names it (comm/test_hooks.hpp), its IPv4 addresses other than loopback, so that a hostfile
  // entry matches by either (OUTDIR/status.json "hosts"; spotrun launch does not use them again).
  std::vector<std::string> noticed_hosts(const comm::Communicator& comm) const;
  // Collective: the seconds left until the earliest deadline of the notices seen (the provider's usual notice
  // when it gives none), the same on every rank; < 0 when no rank saw a notice with a deadline.
  double seconds_left(const comm::Communicator& comm) const;

 private:
  std::unique_ptr<cloud::NoticeWatcher> m_watcher;
  std::string m_header;
};

}  // namespace spotrun::launcher
