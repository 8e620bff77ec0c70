#include "launcher/run/spot_notices.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <map>
#include <sstream>

#include "io/cloud/metadata_endpoint.hpp"
#include "io/cloud/provider.hpp"
#include "comm/device.hpp"
#include "comm/test_hooks.hpp"

namespace spotrun::launcher {

SpotNotices::SpotNotices(const comm::Communicator& comm, const Deck& deck) {
  const std::string choice = deck.get_string("cloud.provider");
  const double poll_seconds = deck.get_float("cloud.poll_seconds");
  std::string url = deck.get_string("cloud.metadata_url");
  if (url.empty()) url = cloud::k_default_metadata_url;
  // What this node does: "PROVIDER\tEVIDENCE" from its node-local rank 0, "" from the others.
  std::string mine;
  if (comm.local_rank() == 0 && choice != "none") {
    cloud::Provider provider = cloud::provider_from_name(choice);
    std::string evidence;
    if (choice == "auto") {
      std::string dmi = cloud::k_dmi_directory;
      if (const auto& hook = comm::test_hooks().dmi_directory)
        if (std::string dir = hook(); !dir.empty()) dmi = dir;  // a test hook (comm/test_hooks.hpp)
      const cloud::DmiDetection d = cloud::detect_provider(dmi);
      provider = d.provider;
      evidence = d.evidence;
    }
    mine = std::string(cloud::provider_name(provider)) + "\t" + evidence;
    // The deck was validated on every rank: the URL parses.
    const auto endpoint = cloud::parse_metadata_url(url);
    if (provider != cloud::Provider::none && endpoint) {
      char host[256] = {0};
      if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
      cloud::WatcherSettings settings;
      settings.provider = provider;
      settings.endpoint = *endpoint;
      settings.poll_seconds = poll_seconds;
      settings.where = std::string("node ") + (host[0] ? host : "?") + " (rank " + std::to_string(comm.rank()) + ")";
      m_watcher = std::make_unique<cloud::NoticeWatcher>(settings);
    }
  }
  const std::vector<std::string> nodes = comm.all_gather(mine);
  if (choice == "none") {
    m_header = "Spot notices: off (cloud.provider = \"none\")";
    return;
  }
  // Nodes grouped by what they do, with the evidence of auto's choice (the first node's of each group).
  std::map<std::string, std::pair<int, std::string>> groups;
  for (const auto& n : nodes) {
    if (n.empty()) continue;
    const std::size_t tab = n.find('\t');
    auto& g = groups[n.substr(0, tab)];
    if (g.first++ == 0) g.second = n.substr(tab + 1);
  }
  std::string text;
  for (const auto& [provider, g] : groups) {
    if (!text.empty()) text += "; ";
    text += (provider == "none" ? "off" : provider) + " on " + std::to_string(g.first) + " node(s)";
    if (!g.second.empty()) text += " (auto: " + g.second + ")";
  }
  const bool polling = groups.size() > 1 || (groups.size() == 1 && groups.begin()->first != "none");
  m_header = "Spot notices: " + text + " (cloud.provider = \"" + choice + "\")";
  if (polling) {
    char every[32];
    std::snprintf(every, sizeof every, "%g", poll_seconds);
    m_header += "; node-local rank 0 polls " + url + " every " + every + " s";
  }
}

SpotNotices::~SpotNotices() = default;

std::string SpotNotices::describe(const comm::Communicator& comm) const {
  std::string mine;
  if (m_watcher)
    if (const auto notice = m_watcher->notice()) mine = cloud::describe(*notice, std::time(nullptr));
  for (const auto& text : comm.all_gather(mine))
    if (!text.empty()) return text;
  return {};
}

double SpotNotices::seconds_left(const comm::Communicator& comm) const {
  double mine = 1e300;
  if (m_watcher)
    if (const auto notice = m_watcher->notice())
      if (notice->deadline) mine = std::difftime(*notice->deadline, std::time(nullptr));
  const double earliest = -comm.max(-mine);
  return earliest >= 1e299 ? -1 : std::max(0.0, earliest);
}

std::vector<std::string> SpotNotices::noticed_hosts(const comm::Communicator& comm) const {
  std::string mine;
  if (m_watcher && m_watcher->notice()) {
    mine = comm::host_name();
    const auto& hook = comm::test_hooks().host_name;  // a host of a test: its addresses are the machine's
    struct ifaddrs* list = nullptr;
    if (!(hook && !hook().empty()) && ::getifaddrs(&list) == 0) {
      for (const struct ifaddrs* a = list; a; a = a->ifa_next) {
        if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || (a->ifa_flags & IFF_LOOPBACK)) continue;
        char text[INET_ADDRSTRLEN] = {};
        const auto* in = reinterpret_cast<const struct sockaddr_in*>(a->ifa_addr);
        if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text)) mine += std::string("\t") + text;
      }
      ::freeifaddrs(list);
    }
  }
  std::vector<std::string> hosts;
  for (const auto& node : comm.all_gather(mine)) {
    std::istringstream names(node);
    std::string name;
    while (std::getline(names, name, '\t'))
      if (!name.empty() && std::find(hosts.begin(), hosts.end(), name) == hosts.end()) hosts.push_back(name);
  }
  return hosts;
}

}  // namespace spotrun::launcher
