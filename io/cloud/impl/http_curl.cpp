// HttpClient on libcurl: one easy handle per transfer, every limit of HttpLimits enforced by libcurl's
// options or by the callbacks below.
#include <curl/curl.h>

#include <chrono>
#include <mutex>

#include "io/cloud/http_client.hpp"

namespace spotrun::cloud {
namespace {

struct Transfer {
  const HttpLimits* limits;
  const std::atomic<bool>* cancel;
  std::string body;
  std::size_t header_bytes = 0;
  bool body_too_large = false;
  bool headers_too_large = false;
};

extern "C" std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  if (t->body.size() + n > t->limits->max_body_bytes) {
    t->body_too_large = true;
    return 0;  // fewer bytes than given: libcurl aborts the transfer (CURLE_WRITE_ERROR)
  }
  t->body.append(data, n);
  return n;
}

extern "C" std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  t->header_bytes += n;
  if (t->header_bytes > t->limits->max_header_bytes) {
    t->headers_too_large = true;
    return 0;
  }
  return n;
}

extern "C" int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return t->cancel && t->cancel->load(std::memory_order_relaxed) ? 1 : 0;  // non-zero aborts
}

// A curl_slist freed on every path.
struct HeaderList {
  curl_slist* list = nullptr;
  ~HeaderList() { curl_slist_free_all(list); }
};
struct EasyHandle {
  CURL* h = curl_easy_init();
  ~EasyHandle() {
    if (h) curl_easy_cleanup(h);
  }
};

}  // namespace

void http_global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

HttpClient::HttpClient(HttpLimits limits, const std::atomic<bool>* cancel) : m_limits(limits), m_cancel(cancel) {
  http_global_init();
}

HttpResponse HttpClient::perform(const HttpRequest& request) const {
  const auto start = std::chrono::steady_clock::now();
  HttpResponse r;
  auto done = [&](HttpResponse& out) -> HttpResponse {
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
  };
  EasyHandle easy;
  if (!easy.h) {
    r.error = "curl_easy_init failed";
    return done(r);
  }
  CURL* h = easy.h;
  Transfer t{&m_limits, m_cancel};
  HeaderList headers;
  for (const auto& [name, value] : request.headers) {
    // Header values come from spotrun or from a token the service gave: no line breaks in them.
    if (value.find_first_of("\r\n") != std::string::npos || name.find_first_of("\r\n:") != std::string::npos) {
      r.error = "header '" + name + "' has a line break in its value; not sent";
      return done(r);
    }
    const std::string line = name + ": " + value;
    curl_slist* next = curl_slist_append(headers.list, line.c_str());
    if (!next) {
      r.error = "curl_slist_append failed";
      return done(r);
    }
    headers.list = next;
  }
  // No "Expect: 100-continue" (curl adds it to some PUTs): one round trip, no waiting for a go-ahead.
  if (curl_slist* next = curl_slist_append(headers.list, "Expect:")) headers.list = next;
  char error_buffer[CURL_ERROR_SIZE] = {0};
  if (request.method != "GET" && request.method != "PUT") {
    r.error = "method " + request.method + " not supported";
    return done(r);
  }
  // Every option checked: a limit that did not take must not leave a transfer unbounded.
  CURLcode set_rc = CURLE_OK;
  const char* failed_option = nullptr;
  auto set = [&](CURLoption option, auto value, const char* name) {
    if (set_rc != CURLE_OK) return;
    set_rc = curl_easy_setopt(h, option, value);
    if (set_rc != CURLE_OK) failed_option = name;
  };
  set(CURLOPT_URL, request.url.c_str(), "CURLOPT_URL");
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85
  set(CURLOPT_PROTOCOLS_STR, "http", "CURLOPT_PROTOCOLS_STR");
#else
  set(CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP), "CURLOPT_PROTOCOLS");
#endif
  set(CURLOPT_FOLLOWLOCATION, 0L, "CURLOPT_FOLLOWLOCATION");
  set(CURLOPT_NOPROXY, "*", "CURLOPT_NOPROXY");  // http_proxy of the environment must not see these requests
  set(CURLOPT_NOSIGNAL, 1L, "CURLOPT_NOSIGNAL");  // no SIGALRM from libcurl: this runs in a thread of an MPI process
  set(CURLOPT_CONNECTTIMEOUT_MS, m_limits.connect_timeout_ms, "CURLOPT_CONNECTTIMEOUT_MS");
  set(CURLOPT_TIMEOUT_MS, m_limits.total_timeout_ms, "CURLOPT_TIMEOUT_MS");
  set(CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(m_limits.max_body_bytes), "CURLOPT_MAXFILESIZE_LARGE");
  set(CURLOPT_FORBID_REUSE, 1L, "CURLOPT_FORBID_REUSE");
  set(CURLOPT_HTTPHEADER, headers.list, "CURLOPT_HTTPHEADER");
  set(CURLOPT_USERAGENT, "spotrun", "CURLOPT_USERAGENT");
  set(CURLOPT_WRITEFUNCTION, on_body, "CURLOPT_WRITEFUNCTION");
  set(CURLOPT_WRITEDATA, static_cast<void*>(&t), "CURLOPT_WRITEDATA");
  set(CURLOPT_HEADERFUNCTION, on_header, "CURLOPT_HEADERFUNCTION");
  set(CURLOPT_HEADERDATA, static_cast<void*>(&t), "CURLOPT_HEADERDATA");
  set(CURLOPT_NOPROGRESS, 0L, "CURLOPT_NOPROGRESS");
  set(CURLOPT_XFERINFOFUNCTION, on_progress, "CURLOPT_XFERINFOFUNCTION");
  set(CURLOPT_XFERINFODATA, static_cast<void*>(&t), "CURLOPT_XFERINFODATA");
  set(CURLOPT_ERRORBUFFER, static_cast<char*>(error_buffer), "CURLOPT_ERRORBUFFER");
  if (request.method == "PUT") set(CURLOPT_CUSTOMREQUEST, "PUT", "CURLOPT_CUSTOMREQUEST");
  if (set_rc != CURLE_OK) {
    r.error = std::string("curl_easy_setopt(") + failed_option + "): " + curl_easy_strerror(set_rc);
    return done(r);
  }
  const CURLcode rc = curl_easy_perform(h);
  r.body = std::move(t.body);
  if (rc == CURLE_OK) {
    r.ok = true;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
    return done(r);
  }
  if (t.body_too_large || rc == CURLE_FILESIZE_EXCEEDED) {
    r.error = "body larger than " + std::to_string(m_limits.max_body_bytes) + " bytes: transfer aborted";
  } else if (t.headers_too_large) {
    r.error = "headers larger than " + std::to_string(m_limits.max_header_bytes) + " bytes: transfer aborted";
  } else if (rc == CURLE_ABORTED_BY_CALLBACK) {
    r.error = "cancelled";
  } else if (rc == CURLE_OPERATION_TIMEDOUT) {
    r.error = std::string("timed out (") + (error_buffer[0] ? error_buffer : curl_easy_strerror(rc)) + ")";
  } else {
    r.error = error_buffer[0] ? error_buffer : curl_easy_strerror(rc);
  }
  r.body.clear();
  return done(r);
}

}  // namespace spotrun::cloud
