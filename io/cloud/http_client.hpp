#pragma once
// A small HTTP client for metadata services (io/cloud/impl/http_curl.cpp: libcurl). Built to meet a hostile
// or broken server: every transfer is bounded in time (connect and total) and in size (status line,
// headers and body), no redirect is followed, no proxy is used, only http:// is spoken, and a transfer in
// flight can be cancelled from another thread. It never throws.
#include <atomic>
#include <string>
#include <utility>
#include <vector>

namespace spotrun::cloud {

struct HttpLimits {
  long connect_timeout_ms = 1000;  // to open the connection
  long total_timeout_ms = 2000;    // the whole transfer, connecting included
  std::size_t max_body_bytes = 64 * 1024;    // a larger body aborts the transfer
  std::size_t max_header_bytes = 16 * 1024;  // status line and headers together
};

struct HttpRequest {
  std::string method = "GET";  // "GET" or "PUT" (with an empty body)
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
};

struct HttpResponse {
  bool ok = false;        // the transfer completed (any status)
  long status = 0;        // HTTP status when ok
  std::string body;       // at most max_body_bytes
  std::string error;      // why not ok: "timed out after 2000 ms", "body larger than 65536 bytes", ...
  double seconds = 0;     // how long it took
};

class HttpClient {
 public:
  // cancel: when it becomes true, a transfer in flight stops (libcurl looks about once a second; error
  // "cancelled").
  explicit HttpClient(HttpLimits limits = {}, const std::atomic<bool>* cancel = nullptr);
  HttpResponse perform(const HttpRequest& request) const;
  const HttpLimits& limits() const { return m_limits; }

 private:
  HttpLimits m_limits;
  const std::atomic<bool>* m_cancel;
};

// Initialises the HTTP library for the process; call once from the main thread before threads use
// HttpClient (the watcher's constructor does). Idempotent.
void http_global_init();

}  // namespace spotrun::cloud
