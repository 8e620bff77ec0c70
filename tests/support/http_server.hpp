#pragma once
// A small HTTP/1.1 server for tests, on a loopback address and an ephemeral port (nothing else: it refuses
// to listen anywhere but 127.0.0.0/8). Each connection is served by its own thread, one request per
// connection (Connection: close), with replies scripted by a handler. Besides normal replies it misbehaves
// as a hostile or broken metadata service may: a huge body (streamed from one buffer until the client
// gives up, so a test never holds it in memory), a body that never ends, a connection that is accepted and
// never answered, a reply after a delay. Every wait is bounded: threads look at the stop flag every 20 ms,
// and the destructor ends them all.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace spotrun::test {

struct HttpRequestSeen {
  std::string method;  // "GET", "PUT"
  std::string target;  // "/latest/api/token", "/metadata/scheduledevents?api-version=2020-07-01"
  std::vector<std::pair<std::string, std::string>> headers;  // names in lower case
  std::string body;
  // The value of a header (name in lower case), "" when absent.
  std::string header(const std::string& name) const {
    for (const auto& [n, v] : headers)
      if (n == name) return v;
    return {};
  }
  bool has_header(const std::string& name) const {
    for (const auto& h : headers)
      if (h.first == name) return true;
    return false;
  }
  // The target without its query.
  std::string path() const { return target.substr(0, target.find('?')); }
};

struct HttpReply {
  enum class Kind {
    normal,        // status, headers and body, then close
    huge_body,     // announces huge_bytes with Content-Length and sends them, until the client closes
    endless_body,  // no Content-Length: one byte every 20 ms, never done
    silent,        // reads the request, never answers (until the client closes or the server stops)
  };
  Kind kind = Kind::normal;
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::uint64_t huge_bytes = 1ull << 30;
  bool announce_length = true;  // huge_body: with Content-Length (false: the body ends when the connection does)
  double delay_seconds = 0;  // before anything is sent

  static HttpReply make(int status, std::string body = {}) {
    HttpReply r;
    r.status = status;
    r.body = std::move(body);
    return r;
  }
  static HttpReply misbehave(Kind kind) {
    HttpReply r;
    r.kind = kind;
    return r;
  }
};

class HttpServer {
 public:
  using Handler = std::function<HttpReply(const HttpRequestSeen&)>;

  // Listens on address (an IPv4 loopback address) at an ephemeral port; the handler is called on the
  // connection's thread, one call at a time.
  explicit HttpServer(Handler handler, const std::string& address = "127.0.0.1") : m_handler(std::move(handler)) {
    in_addr a{};
    if (inet_pton(AF_INET, address.c_str(), &a) != 1 || (ntohl(a.s_addr) >> 24) != 127)
      throw std::invalid_argument("HttpServer: '" + address + "' is not an IPv4 loopback address");
    m_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (m_fd < 0) throw std::runtime_error("HttpServer: socket() failed");
    const int one = 1;
    ::setsockopt(m_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr = a;
    sa.sin_port = 0;
    socklen_t len = sizeof sa;
    if (::bind(m_fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 || ::listen(m_fd, 64) != 0 ||
        ::getsockname(m_fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
      ::close(m_fd);
      throw std::runtime_error("HttpServer: cannot listen on " + address + ": " + std::strerror(errno));
    }
    m_port = ntohs(sa.sin_port);
    m_address = address;
    m_acceptor = std::thread([this] { accept_loop(); });
  }
  ~HttpServer() { stop(); }
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Ends every thread and closes every socket; idempotent.
  void stop() {
    if (m_stop.exchange(true)) return;
    if (m_acceptor.joinable()) m_acceptor.join();
    std::vector<std::thread> connections;
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      connections.swap(m_connections);
    }
    for (auto& t : connections) t.join();
    ::close(m_fd);
  }

  int port() const { return m_port; }
  const std::string& address() const { return m_address; }
  std::string url() const { return "http://" + m_address + ":" + std::to_string(m_port); }
  std::vector<HttpRequestSeen> requests() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_requests;
  }
  std::size_t request_count() const {
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_requests.size();
  }
  // Connections accepted so far.
  std::size_t connections() const { return m_accepted.load(); }
  // Body bytes the server managed to send in all (huge and endless bodies: how far the client read).
  std::uint64_t body_bytes_sent() const { return m_body_bytes.load(); }

 private:
  void accept_loop() {
    while (!m_stop.load()) {
      pollfd p{m_fd, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int c = ::accept4(m_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      ++m_accepted;
      std::lock_guard<std::mutex> lock(m_mutex);
      m_connections.emplace_back([this, c] {
        serve(c);
        ::close(c);
      });
    }
  }

  // Waits up to ms for the socket to be readable (or closed); false when stopping or on timeout.
  bool wait_readable(int fd, int ms) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (!m_stop.load() && std::chrono::steady_clock::now() < end) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 20) > 0) return true;
    }
    return false;
  }

  bool send_all(int fd, const char* data, std::size_t n) {
    while (n > 0 && !m_stop.load()) {
      pollfd p{fd, POLLOUT, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      if (p.revents & (POLLERR | POLLHUP)) return false;
      const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (w <= 0) return false;
      data += w;
      n -= static_cast<std::size_t>(w);
    }
    return n == 0;
  }

  // Sleeps up to seconds, in steps, ending early when stopping.
  void pause(double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!m_stop.load() && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  void serve(int fd) {
    // The request head (at most 64 KiB, within 5 s), then a body of Content-Length bytes (at most 64 KiB).
    std::string in;
    std::size_t head_end = std::string::npos;
    while (head_end == std::string::npos && in.size() < 65536) {
      if (!wait_readable(fd, 5000)) return;
      char buf[4096];
      const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
      if (r <= 0) return;
      in.append(buf, static_cast<std::size_t>(r));
      head_end = in.find("\r\n\r\n");
    }
    if (head_end == std::string::npos) return;
    HttpRequestSeen req;
    std::size_t line_end = in.find("\r\n");
    const std::string request_line = in.substr(0, line_end);
    const std::size_t sp1 = request_line.find(' '), sp2 = request_line.rfind(' ');
    if (sp1 == std::string::npos || sp2 == sp1) return;
    req.method = request_line.substr(0, sp1);
    req.target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
    std::size_t at = line_end + 2;
    std::size_t content_length = 0;
    while (at < head_end) {
      const std::size_t e = in.find("\r\n", at);
      const std::string line = in.substr(at, e - at);
      at = e + 2;
      const std::size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      if (name == "content-length") {
        std::size_t digits = 0;
        while (digits < value.size() && digits < 6 && std::isdigit(static_cast<unsigned char>(value[digits]))) ++digits;
        content_length = std::min<std::size_t>(digits ? std::stoul(value.substr(0, digits)) : 0, 65536);
      }
      req.headers.emplace_back(name, value);
    }
    req.body = in.substr(head_end + 4);
    while (req.body.size() < content_length) {
      if (!wait_readable(fd, 5000)) return;
      char buf[4096];
      const ssize_t r = ::recv(fd, buf, sizeof buf, 0);
      if (r <= 0) return;
      req.body.append(buf, static_cast<std::size_t>(r));
    }
    HttpReply reply;
    {
      std::lock_guard<std::mutex> lock(m_handler_mutex);
      reply = m_handler(req);
    }
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      m_requests.push_back(req);
    }
    pause(reply.delay_seconds);
    if (reply.kind == HttpReply::Kind::silent) {
      // Never answer: wait until the client closes (recv 0) or the server stops.
      while (!m_stop.load()) {
        if (!wait_readable(fd, 1000)) continue;
        char buf[256];
        const ssize_t r = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) return;
      }
      return;
    }
    std::string head = "HTTP/1.1 " + std::to_string(reply.status) + " " + reason(reply.status) + "\r\n";
    if (reply.kind == HttpReply::Kind::normal)
      head += "Content-Length: " + std::to_string(reply.body.size()) + "\r\n";
    if (reply.kind == HttpReply::Kind::huge_body && reply.announce_length)
      head += "Content-Length: " + std::to_string(reply.huge_bytes) + "\r\n";
    head += "Connection: close\r\n";
    for (const auto& [n, v] : reply.headers) head += n + ": " + v + "\r\n";
    head += "\r\n";
    if (!send_all(fd, head.data(), head.size())) return;
    switch (reply.kind) {
      case HttpReply::Kind::normal:
        if (send_all(fd, reply.body.data(), reply.body.size())) m_body_bytes += reply.body.size();
        break;
      case HttpReply::Kind::huge_body: {
        const std::string chunk(65536, 'x');
        for (std::uint64_t sent = 0; sent < reply.huge_bytes && !m_stop.load();) {
          const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk.size(), reply.huge_bytes - sent));
          if (!send_all(fd, chunk.data(), n)) break;
          sent += n;
          m_body_bytes += n;
        }
        break;
      }
      case HttpReply::Kind::endless_body:
        while (!m_stop.load() && send_all(fd, "x", 1)) {
          ++m_body_bytes;
          pause(0.02);
        }
        break;
      case HttpReply::Kind::silent: break;
    }
    ::shutdown(fd, SHUT_WR);
  }

  static const char* reason(int status) {
    switch (status) {
      case 200: return "OK";
      case 302: return "Found";
      case 401: return "Unauthorized";
      case 403: return "Forbidden";
      case 404: return "Not Found";
      case 500: return "Internal Server Error";
      default: return "Status";
    }
  }

  Handler m_handler;
  int m_fd = -1;
  int m_port = 0;
  std::string m_address;
  std::atomic<bool> m_stop{false};
  std::atomic<std::size_t> m_accepted{0};
  std::atomic<std::uint64_t> m_body_bytes{0};
  mutable std::mutex m_mutex;
  std::mutex m_handler_mutex;
  std::vector<std::thread> m_connections;
  std::vector<HttpRequestSeen> m_requests;
  std::thread m_acceptor;
};

}  // namespace spotrun::test
