#include "spot_notices.hpp"

#include <unistd.h>

#include <ctime>
#include <map>

#include "launcher/cloud/metadata_endpoint.hpp"
#include "launcher/cloud/provider.hpp"

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
      const cloud::DmiDetection d = cloud::detect_provider(cloud::dmi_directory());
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

}  // namespace spotrun::launcher
