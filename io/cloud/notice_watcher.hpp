#pragma once
// The spot notice watcher: a thread that polls a provider's metadata service (NoticePoller) every
// poll_seconds until it sees a notice, then sets a flag and stops polling. The thread makes no MPI call and
// the owner only reads an atomic, so a slow, huge, malformed or hostile answer cannot block or crash a run;
// the destructor cancels a transfer in flight (libcurl looks at the cancel flag about once a second) and
// joins the thread.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "notice_poller.hpp"

namespace spotrun::cloud {

struct WatcherSettings {
  Provider provider = Provider::none;
  MetadataEndpoint endpoint;
  double poll_seconds = 5;
  HttpLimits limits;
  std::string where;  // names this node in messages ("node c5-12")
  bool quiet = false; // no messages on stderr (tests)
};

class NoticeWatcher {
 public:
  // Starts the thread (provider must not be none). Call from the main thread.
  explicit NoticeWatcher(WatcherSettings settings);
  ~NoticeWatcher();
  NoticeWatcher(const NoticeWatcher&) = delete;
  NoticeWatcher& operator=(const NoticeWatcher&) = delete;

  // A notice was seen (then notice() holds it).
  bool noticed() const { return m_noticed.load(std::memory_order_acquire); }
  std::optional<SpotNotice> notice() const;
  // Polls done so far, and how many of them failed.
  long polls() const { return m_polls.load(); }
  long failures() const { return m_failures.load(); }
  const WatcherSettings& settings() const { return m_settings; }

 private:
  void run();
  WatcherSettings m_settings;
  std::atomic<bool> m_stop{false};
  std::atomic<bool> m_noticed{false};
  std::atomic<long> m_polls{0}, m_failures{0};
  mutable std::mutex m_mutex;
  std::condition_variable m_wake;
  std::optional<SpotNotice> m_notice;
  std::thread m_thread;  // last: started when everything above is ready
};

}  // namespace spotrun::cloud
