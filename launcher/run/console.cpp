#include "launcher/run/console.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

namespace spotrun::launcher {
namespace {

// A line of stdout that starts with this byte carries its level in the next one ('a' always, 'n' normal,
// 'd' detail); the thread takes both off. Lines without it are details.
constexpr char k_mark = '\x1e';

std::atomic<Console::Impl*> g_active{nullptr};

void write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

}  // namespace

struct Console::Impl {
  Console* owner = nullptr;
  Verbosity verbosity = Verbosity::normal;
  int terminal = -1;   // the process's stdout before the pipe
  int read_end = -1;   // of the pipe that is stdout now
  std::atomic<bool> stopping{false};
  std::thread reader;
  std::mutex mutex;    // log, pending, log_failed
  int log = -1;
  std::string pending;  // the lines before the log opened
  bool log_failed = false;

  void to_log(const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex);
    if (log >= 0)
      write_all(log, text.data(), text.size());
    else if (!log_failed)
      pending += text;
  }

  // One line, with its newline.
  void handle(std::string line) {
    bool show = verbosity == Verbosity::verbose;
    if (line.size() >= 2 && line[0] == k_mark) {
      const char level = line[1];
      line.erase(0, 2);
      show = show || level == 'a' || (level == 'n' && verbosity == Verbosity::normal);
    }
    to_log(line);
    if (show) write_all(terminal, line.data(), line.size());
  }

  // Reads the pipe until stdout is given back and the pipe is empty (EOF; or, when a child process still
  // holds the pipe open, a quiet 200 ms once the Console is stopping).
  void loop() {
    char buf[65536];
    std::string partial;
    for (;;) {
      pollfd p{read_end, POLLIN, 0};
      const int r = ::poll(&p, 1, 200);
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) {
        if (stopping) break;
        continue;
      }
      const ssize_t n = ::read(read_end, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      partial.append(buf, static_cast<std::size_t>(n));
      std::size_t start = 0;
      for (std::size_t nl; (nl = partial.find('\n', start)) != std::string::npos; start = nl + 1)
        handle(partial.substr(start, nl + 1 - start));
      partial.erase(0, start);
    }
    if (!partial.empty()) handle(partial + "\n");
  }
};

Console::Console(bool root, Verbosity verbosity) : m_root(root), m_verbosity(verbosity) {
  if (!root) return;
  auto impl = std::make_unique<Impl>();
  impl->verbosity = verbosity;
  impl->owner = this;
  std::fflush(stdout);
  int fds[2];
  impl->terminal = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);
  if (impl->terminal < 0 || ::pipe2(fds, O_CLOEXEC) != 0) {
    if (impl->terminal >= 0) ::close(impl->terminal);
    return;  // no log and no filter: stdout as it was
  }
  ::dup2(fds[1], STDOUT_FILENO);  // without O_CLOEXEC: a child process writes where spotrun's stdout goes
  ::close(fds[1]);
  impl->read_end = fds[0];
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Impl* raw = impl.get();
  impl->reader = std::thread([raw] { raw->loop(); });
  m_impl = std::move(impl);
  g_active = m_impl.get();
}

Console::~Console() {
  if (!m_impl) return;
  g_active = nullptr;
  std::fflush(stdout);
  std::fflush(stderr);
  ::dup2(m_impl->terminal, STDOUT_FILENO);  // closes the pipe's write end: the thread reads to its end
  m_impl->stopping = true;
  if (m_impl->reader.joinable()) m_impl->reader.join();
  ::close(m_impl->terminal);
  ::close(m_impl->read_end);
  if (m_impl->log >= 0) ::close(m_impl->log);
}

void Console::open_log(const std::string& path, const std::string& heading) {
  if (!m_impl) return;
  std::fflush(stdout);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0644);
  std::lock_guard<std::mutex> lock(m_impl->mutex);
  if (fd < 0) {
    m_impl->log_failed = true;
    m_impl->pending.clear();
    std::fprintf(stderr, "WARNING: cannot open %s: %s; the run goes on without its log\n", path.c_str(),
                 std::strerror(errno));
    return;
  }
  m_impl->log = fd;
  const std::string text = heading + "\n" + m_impl->pending;
  write_all(fd, text.data(), text.size());
  m_impl->pending.clear();
}

void say(Show level, const std::string& line) {
  if (g_active.load() == nullptr) {
    std::printf("%s\n", line.c_str());
    return;
  }
  const char code = level == Show::always ? 'a' : level == Show::normal ? 'n' : 'd';
  std::string text;  // every line of a text marked, in one write
  std::size_t start = 0;
  for (std::size_t nl;; start = nl + 1) {
    nl = line.find('\n', start);
    text += k_mark;
    text += code;
    text += line.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    text += '\n';
    if (nl == std::string::npos || nl + 1 == line.size()) break;
  }
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

void say_error(const std::string& line) {
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
  if (Console::Impl* c = g_active.load()) c->to_log(line + "\n");
}

}  // namespace spotrun::launcher

namespace spotrun::launcher {

void log_only(const std::string& line) {
  if (Console::Impl* c = g_active.load()) c->to_log(line + "\n");
}

void open_run_log(const std::string& path, const std::string& heading) {
  if (Console::Impl* c = g_active.load()) c->owner->open_log(path, heading);
}

}  // namespace spotrun::launcher
