// HttpClient on libcurl: one easy handle per transfer, every limit of HttpLimits enforced by libcurl's
// options or by the callbacks below.
#include <curl/curl.h>

#include <chrono>
#include <mutex>

#include "cloud/http_client.hpp"

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
  curl_easy_setopt(h, CURLOPT_URL, request.url.c_str());
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
#else
  curl_easy_setopt(h, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP));
#endif
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_NOPROXY, "*");  // http_proxy of the environment must not see these requests
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // no SIGALRM from libcurl: this runs in a thread of an MPI process
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, m_limits.connect_timeout_ms);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, m_limits.total_timeout_ms);
  curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(m_limits.max_body_bytes));
  curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.list);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "spotrun");
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
  if (request.method == "PUT") {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
  } else if (request.method != "GET") {
    r.error = "method " + request.method + " not supported";
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
