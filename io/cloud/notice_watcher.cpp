#include "notice_watcher.hpp"

#include <chrono>
#include <cstdio>

namespace spotrun::cloud {

NoticeWatcher::NoticeWatcher(WatcherSettings settings) : m_settings(std::move(settings)) {
  http_global_init();  // here, on the calling thread, before the watcher's thread uses libcurl
  m_thread = std::thread([this] { run(); });
}

NoticeWatcher::~NoticeWatcher() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_stop.store(true);
  }
  m_wake.notify_all();
  if (m_thread.joinable()) m_thread.join();
}

std::optional<SpotNotice> NoticeWatcher::notice() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_notice;
}

void NoticeWatcher::run() {
  NoticePoller poller(m_settings.provider, m_settings.endpoint, m_settings.limits, &m_stop);
  const char* name = provider_name(m_settings.provider);
  const std::string url = m_settings.endpoint.url("");
  const auto interval = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(m_settings.poll_seconds));
  bool warned_failure = false, warned_rebalance = false;
  while (!m_stop.load()) {
    const auto started = std::chrono::steady_clock::now();
    const std::time_t now = std::time(nullptr);
    PollResult r = poller.poll(now);
    if (m_stop.load()) break;  // a cancelled transfer is no failure worth a word
    m_polls.fetch_add(1);
    if (r.outcome == PollResult::Outcome::notice) {
      {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_notice = r.notice;
      }
      m_noticed.store(true, std::memory_order_release);
      if (!m_settings.quiet)
        std::fprintf(stderr, "spotrun: spot notice on %s: %s; the run stops with a checkpoint at the next agreed step\n",
                     m_settings.where.c_str(), describe(r.notice, std::time(nullptr)).c_str());
      return;  // nothing more to learn: the instance goes
    }
    if (r.outcome == PollResult::Outcome::failed) {
      m_failures.fetch_add(1);
      if (!warned_failure && !m_settings.quiet)
        std::fprintf(stderr,
                     "WARNING: spot notice poll on %s failed (%s, %s): %s; polling goes on every %g s "
                     "(later failures are not reported)\n",
                     m_settings.where.c_str(), name, url.c_str(), r.error.c_str(), m_settings.poll_seconds);
      warned_failure = true;
    }
    if (r.rebalance && !warned_rebalance && !m_settings.quiet)
      std::fprintf(stderr,
                   "WARNING: rebalance recommendation on %s (%s, noticeTime %s): the instance is at elevated risk "
                   "of interruption; the run goes on and stops with a checkpoint at a spot notice\n",
                   m_settings.where.c_str(), name, r.rebalance->c_str());
    warned_rebalance = warned_rebalance || r.rebalance.has_value();
    std::unique_lock<std::mutex> lock(m_mutex);
    m_wake.wait_until(lock, started + interval, [this] { return m_stop.load(); });
  }
}

}  // namespace spotrun::cloud
