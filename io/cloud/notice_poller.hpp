#pragma once
// One poll of a provider's metadata service for a spot notice (docs/cloud.md, "Spot notices"):
//   aws    IMDSv2: PUT /latest/api/token (X-aws-ec2-metadata-token-ttl-seconds), kept and renewed before it
//          expires; GET /latest/meta-data/spot/instance-action with X-aws-ec2-metadata-token: 404 is no
//          notice, {"action": ..., "time": ...} a notice; without one, GET
//          /latest/meta-data/events/recommendations/rebalance: {"noticeTime": ...} is a rebalance
//          recommendation (a warning, not a stop).
//   gcp    GET /computeMetadata/v1/instance/preempted with Metadata-Flavor: Google: "TRUE" is a notice
//          (about 30 s left), "FALSE" none.
//   azure  GET /metadata/scheduledevents?api-version=2020-07-01 with Metadata: true: an event of
//          EventType "Preempt" is a notice (NotBefore its deadline) unless its Resources name other VMs
//          only (this VM's name from /metadata/instance/compute/name, asked once when needed).
// Every answer is checked (status, size, JSON through nlohmann::json without exceptions escaping): a
// malformed one is a failed poll, never a notice and never a crash. Not thread-safe: one thread polls.
#include <ctime>
#include <optional>
#include <string>

#include "http_client.hpp"
#include "metadata_endpoint.hpp"
#include "provider.hpp"
#include "spot_notice.hpp"

namespace spotrun::cloud {

struct PollResult {
  enum class Outcome { none, notice, failed };
  Outcome outcome = Outcome::none;
  SpotNotice notice;                     // outcome == notice
  std::string error;                     // outcome == failed: what went wrong, for a warning
  std::optional<std::string> rebalance;  // aws: a rebalance recommendation (its noticeTime, printable)
  double seconds = 0;                    // how long the poll took
};

class NoticePoller {
 public:
  NoticePoller(Provider provider, MetadataEndpoint endpoint, HttpLimits limits = {},
               const std::atomic<bool>* cancel = nullptr);
  // Asks the service once (several requests for aws); `now` is the time a notice is stamped with.
  PollResult poll(std::time_t now);
  Provider provider() const { return m_provider; }

  // AWS: the token's lifetime asked for, and how long before its end a new one is asked.
  static constexpr int k_aws_token_ttl = 300;
  static constexpr int k_aws_token_renew = 60;

 private:
  PollResult poll_aws(std::time_t now);
  PollResult poll_gcp(std::time_t now);
  PollResult poll_azure(std::time_t now);
  HttpResponse get(const std::string& path, std::vector<std::pair<std::string, std::string>> headers);

  Provider m_provider;
  MetadataEndpoint m_endpoint;
  HttpClient m_http;
  std::string m_aws_token;
  std::time_t m_aws_token_expires = 0;
  std::optional<std::string> m_azure_vm_name;  // asked once a Preempt event names resources
  bool m_azure_vm_name_asked = false;
};

}  // namespace spotrun::cloud
