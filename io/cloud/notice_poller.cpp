#include "notice_poller.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>

namespace spotrun::cloud {
namespace {

using json = nlohmann::json;

std::string trim(const std::string& s) {
  const char* blanks = " \t\r\n";
  const std::size_t a = s.find_first_not_of(blanks);
  if (a == std::string::npos) return {};
  return s.substr(a, s.find_last_not_of(blanks) - a + 1);
}

// The body as a JSON object, or nullopt (malformed, or another JSON value); never throws.
std::optional<json> json_object(const std::string& body) {
  try {
    json j = json::parse(body, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    return j;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// A string member of a JSON object, or "" when absent or not a string.
std::string member(const json& object, const char* name) {
  const auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

PollResult failed(const std::string& what) {
  PollResult r;
  r.outcome = PollResult::Outcome::failed;
  r.error = what;
  return r;
}

// "GET /path: timed out ..." or "GET /path: HTTP 500".
std::string problem(const std::string& what, const HttpResponse& r) {
  return what + ": " + (r.ok ? "HTTP " + std::to_string(r.status) : r.error);
}

}  // namespace

NoticePoller::NoticePoller(Provider provider, MetadataEndpoint endpoint, HttpLimits limits,
                           const std::atomic<bool>* cancel)
    : m_provider(provider), m_endpoint(std::move(endpoint)), m_http(limits, cancel) {}

HttpResponse NoticePoller::get(const std::string& path, std::vector<std::pair<std::string, std::string>> headers) {
  HttpRequest request;
  request.url = m_endpoint.url(path);
  request.headers = std::move(headers);
  return m_http.perform(request);
}

PollResult NoticePoller::poll(std::time_t now) {
  PollResult r;
  const auto start = std::chrono::steady_clock::now();
  try {
    switch (m_provider) {
      case Provider::aws: r = poll_aws(now); break;
      case Provider::gcp: r = poll_gcp(now); break;
      case Provider::azure: r = poll_azure(now); break;
      case Provider::none: break;
    }
  } catch (const std::exception& e) {  // std::bad_alloc and the like: a failed poll, not a crash
    r = failed(std::string("internal error: ") + e.what());
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

PollResult NoticePoller::poll_aws(std::time_t now) {
  if (m_aws_token.empty() || now >= m_aws_token_expires - k_aws_token_renew) {
    m_aws_token.clear();
    HttpRequest put;
    put.method = "PUT";
    put.url = m_endpoint.url("/latest/api/token");
    put.headers = {{"X-aws-ec2-metadata-token-ttl-seconds", std::to_string(k_aws_token_ttl)}};
    const HttpResponse t = m_http.perform(put);
    if (!t.ok || t.status != 200) return failed(problem("PUT /latest/api/token", t));
    const std::string token = trim(t.body);
    // A token goes back in a header: visible ASCII only, and not absurdly long.
    const bool fit = !token.empty() && token.size() <= 4096 &&
                     std::all_of(token.begin(), token.end(), [](char c) { return c > 0x20 && c < 0x7f; });
    if (!fit) return failed("PUT /latest/api/token: the answer is not a token (" + std::to_string(t.body.size()) + " bytes)");
    m_aws_token = token;
    m_aws_token_expires = now + k_aws_token_ttl;
  }
  const std::vector<std::pair<std::string, std::string>> auth{{"X-aws-ec2-metadata-token", m_aws_token}};
  const char* action_path = "/latest/meta-data/spot/instance-action";
  const HttpResponse a = get(action_path, auth);
  if (a.ok && a.status == 401) {
    m_aws_token.clear();  // expired or revoked: a new one at the next poll
    return failed(std::string("GET ") + action_path + ": HTTP 401 (token refused; a new one is asked next time)");
  }
  if (!a.ok || (a.status != 200 && a.status != 404)) return failed(problem(std::string("GET ") + action_path, a));
  if (a.status == 200) {
    const auto j = json_object(a.body);
    if (!j || member(*j, "action").empty())
      return failed(std::string("GET ") + action_path + ": not the JSON object {\"action\": ..., \"time\": ...} expected: \"" +
                    printable(a.body) + "\"");
    PollResult r;
    r.outcome = PollResult::Outcome::notice;
    r.notice.provider = Provider::aws;
    r.notice.action = printable(member(*j, "action"), 32);
    r.notice.noticed_at = now;
    const std::string time = member(*j, "time");
    r.notice.deadline = parse_rfc3339(time);
    if (!r.notice.deadline) r.notice.deadline_text = printable(time);
    return r;
  }
  // No notice: is there a rebalance recommendation? Its failure is not the poll's (older instances lack it).
  PollResult r;
  const HttpResponse b = get("/latest/meta-data/events/recommendations/rebalance", auth);
  if (b.ok && b.status == 200) {
    const auto j = json_object(b.body);
    r.rebalance = j ? printable(member(*j, "noticeTime")) : std::string();
    if (r.rebalance->empty()) r.rebalance = "time not given";
  }
  return r;
}

PollResult NoticePoller::poll_gcp(std::time_t now) {
  const char* path = "/computeMetadata/v1/instance/preempted";
  const HttpResponse p = get(path, {{"Metadata-Flavor", "Google"}});
  if (!p.ok || p.status != 200) return failed(problem(std::string("GET ") + path, p));
  const std::string answer = trim(p.body);
  if (answer == "FALSE") return {};
  if (answer != "TRUE")
    return failed(std::string("GET ") + path + ": expected TRUE or FALSE, got \"" + printable(answer) + "\"");
  PollResult r;
  r.outcome = PollResult::Outcome::notice;
  r.notice.provider = Provider::gcp;
  r.notice.action = "preempted";
  r.notice.noticed_at = now;
  r.notice.deadline = now + k_gcp_notice_seconds;
  r.notice.deadline_estimated = true;
  return r;
}

PollResult NoticePoller::poll_azure(std::time_t now) {
  const char* path = "/metadata/scheduledevents?api-version=2020-07-01";
  const HttpResponse e = get(path, {{"Metadata", "true"}});
  if (!e.ok || e.status != 200) return failed(problem(std::string("GET ") + path, e));
  const auto j = json_object(e.body);
  const json* events = nullptr;
  if (j) {
    const auto it = j->find("Events");
    if (it != j->end() && it->is_array()) events = &*it;
  }
  if (!events)
    return failed(std::string("GET ") + path + ": not the JSON object {\"Events\": [...]} expected: \"" +
                  printable(e.body) + "\"");
  for (const json& event : *events) {
    if (!event.is_object() || member(event, "EventType") != "Preempt") continue;
    // Events reach every VM of an availability set or scale set: is this one among the Resources?
    std::vector<std::string> resources;
    const auto res = event.find("Resources");
    if (res != event.end() && res->is_array())
      for (const json& name : *res)
        if (name.is_string()) resources.push_back(name.get<std::string>());
    if (!resources.empty()) {
      if (!m_azure_vm_name_asked) {
        m_azure_vm_name_asked = true;
        const HttpResponse n = get("/metadata/instance/compute/name?api-version=2020-09-01&format=text", {{"Metadata", "true"}});
        if (n.ok && n.status == 200 && !trim(n.body).empty()) m_azure_vm_name = trim(n.body);
      }
      // Without this VM's name every Preempt counts: a stop too many beats a lost run.
      if (m_azure_vm_name && std::find(resources.begin(), resources.end(), *m_azure_vm_name) == resources.end())
        continue;
    }
    PollResult r;
    r.outcome = PollResult::Outcome::notice;
    r.notice.provider = Provider::azure;
    r.notice.action = "Preempt";
    r.notice.noticed_at = now;
    const std::string not_before = member(event, "NotBefore");
    if (not_before.empty()) {
      r.notice.deadline = now + k_azure_notice_seconds;
      r.notice.deadline_estimated = true;
    } else {
      r.notice.deadline = parse_http_date(not_before);
      if (!r.notice.deadline) r.notice.deadline = parse_rfc3339(not_before);
      if (!r.notice.deadline) r.notice.deadline_text = printable(not_before);
    }
    return r;
  }
  return {};
}

}  // namespace spotrun::cloud
