// Spot notices (cloud/): the metadata endpoint a deck may name, the provider from DMI, deadlines, and the
// poller and watcher against a local HTTP server (tests/support/http_server.hpp) that answers as each
// provider does, then as hostile and broken services do. Loopback only; every wait is bounded.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "io/cloud/metadata_endpoint.hpp"
#include "io/cloud/notice_poller.hpp"
#include "io/cloud/notice_watcher.hpp"
#include "io/cloud/provider.hpp"
#include "io/cloud/spot_notice.hpp"
#include "comm/errors.hpp"
#include "launcher/deck/deck.hpp"
#include "support/http_server.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1);

namespace fs = std::filesystem;
using namespace spotrun::cloud;
using spotrun::test::HttpReply;
using spotrun::test::HttpRequestSeen;
using spotrun::test::HttpServer;
using Outcome = PollResult::Outcome;

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

MetadataEndpoint endpoint_of(const HttpServer& server) {
  std::string why;
  auto e = parse_metadata_url(server.url(), &why);
  EXPECT_TRUE(e) << why;
  return e ? *e : MetadataEndpoint{};
}

const std::time_t k_deadline = *parse_rfc3339("2026-11-30T12:00:00Z");

// An AWS metadata service: a token for a PUT with the TTL header, instance-action and rebalance answered by
// the functions given (404 by default), 401 for a GET without the token.
struct FakeAws {
  std::function<HttpReply()> instance_action = [] { return HttpReply::make(404, "Not Found"); };
  std::function<HttpReply()> rebalance = [] { return HttpReply::make(404, "Not Found"); };
  std::string token = "AQAEAFakeToken_-=";
  HttpReply operator()(const HttpRequestSeen& r) const {
    if (r.method == "PUT" && r.target == "/latest/api/token")
      return r.has_header("x-aws-ec2-metadata-token-ttl-seconds") ? HttpReply::make(200, token)
                                                                  : HttpReply::make(400, "missing TTL");
    if (r.method != "GET") return HttpReply::make(405);
    if (r.header("x-aws-ec2-metadata-token") != token) return HttpReply::make(401, "Unauthorized");
    if (r.target == "/latest/meta-data/spot/instance-action") return instance_action();
    if (r.target == "/latest/meta-data/events/recommendations/rebalance") return rebalance();
    return HttpReply::make(404);
  }
};

}  // namespace

// --- (c) the metadata endpoint: loopback and link-local IP literals only --------------------------------

TEST(MetadataUrl, AcceptsLoopbackAndLinkLocalLiterals) {
  struct Case {
    const char* url;
    const char* host;
    int port;
    const char* base;
  };
  for (const Case& c : {Case{"http://169.254.169.254", "169.254.169.254", 80, ""},
                        Case{"http://127.0.0.1:8080", "127.0.0.1", 8080, ""},
                        Case{"HTTP://127.9.8.7:1/prefix/dir/", "127.9.8.7", 1, "/prefix/dir"},
                        Case{"http://169.254.0.1:65535/", "169.254.0.1", 65535, ""},
                        Case{"http://[::1]:9", "[::1]", 9, ""},
                        Case{"http://[fe80::a9fe:a9fe]", "[fe80::a9fe:a9fe]", 80, ""},
                        Case{"http://[fe80::1%25eth0]:80/x", "[fe80::1%25eth0]", 80, "/x"}}) {
    std::string why;
    const auto e = parse_metadata_url(c.url, &why);
    ASSERT_TRUE(e) << c.url << ": " << why;
    EXPECT_EQ(e->host, c.host) << c.url;
    EXPECT_EQ(e->port, c.port) << c.url;
    EXPECT_EQ(e->base_path, c.base) << c.url;
    EXPECT_EQ(check_metadata_url(c.url), "") << c.url;
  }
  EXPECT_EQ(parse_metadata_url("http://127.0.0.1:8080/p")->url("/latest/api/token"),
            "http://127.0.0.1:8080/p/latest/api/token");
  EXPECT_EQ(check_metadata_url(""), "");  // the provider's default
}

TEST(MetadataUrl, RefusesEverythingElse) {
  struct Case {
    const char* url;
    const char* why;  // a part of the reason
  };
  for (const Case& c : {Case{"http://10.0.0.1", "neither loopback nor link-local"},
                        Case{"http://8.8.8.8:80", "neither loopback nor link-local"},
                        Case{"http://192.168.1.1", "neither loopback nor link-local"},
                        Case{"http://169.253.169.254", "neither loopback nor link-local"},
                        Case{"http://0.0.0.0", "neither loopback nor link-local"},
                        Case{"http://metadata.google.internal", "a name, not an IP address"},
                        Case{"http://localhost:8080", "a name, not an IP address"},
                        Case{"http://127.1", "not an IPv4 address in dotted decimal"},
                        Case{"http://0177.0.0.1", "not an IPv4 address in dotted decimal"},
                        Case{"http://127.0.0.01", "not an IPv4 address in dotted decimal"},
                        Case{"http://2130706433", "not an IPv4 address in dotted decimal"},
                        Case{"http://0x7f.0.0.1", "not an IPv4 address in dotted decimal"},
                        Case{"http://127.0.0.256", "not an IPv4 address in dotted decimal"},
                        Case{"http://127.0.0.1.5", "not an IPv4 address in dotted decimal"},
                        Case{"http://[::ffff:127.0.0.1]", "neither loopback nor link-local"},
                        Case{"http://[fd00:ec2::254]", "neither loopback nor link-local"},
                        Case{"http://[2001:db8::1]", "neither loopback nor link-local"},
                        Case{"http://[::1%25lo]", "a zone belongs to a link-local address only"},
                        Case{"http://[fe80::1%eth0]", "%25"},
                        Case{"http://[::1", "closing ']'"},
                        Case{"https://169.254.169.254", "not an http:// URL"},
                        Case{"ftp://127.0.0.1", "not an http:// URL"},
                        Case{"169.254.169.254", "not an http:// URL"},
                        Case{"http://user@127.0.0.1", "user name"},
                        Case{"http://127.0.0.1@10.0.0.1", "user name"},
                        Case{"http://127.0.0.1/latest?x=1", "no query"},
                        Case{"http://127.0.0.1/#frag", "no query, fragment"},
                        Case{"http://127.0.0.1/%2e%2e", "no query, fragment or escapes"},
                        Case{"http://127.0.0.1:0", "not a number from 1 to 65535"},
                        Case{"http://127.0.0.1:65536", "not a number from 1 to 65535"},
                        Case{"http://127.0.0.1:99999999999999999999", "not a number from 1 to 65535"},
                        Case{"http://127.0.0.1:", "an empty port"},
                        Case{"http://", "no address"}}) {
    std::string why;
    EXPECT_FALSE(parse_metadata_url(c.url, &why)) << c.url;
    EXPECT_NE(why.find(c.why), std::string::npos) << c.url << ": " << why;
    EXPECT_EQ(check_metadata_url(c.url), why);
  }
}

TEST(MetadataUrl, DeckValidationRefusesOtherAddresses) {
  using spotrun::launcher::Deck;
  auto error = [](const std::string& toml) -> std::string {
    try {
      Deck::parse(toml, "deck.toml").validate();
    } catch (const spotrun::InputError& e) {
      return e.what();
    }
    return {};
  };
  const std::string e = error("[cloud]\nprovider = \"aws\"\nmetadata_url = \"http://10.1.2.3:80\"\n");
  EXPECT_NE(e.find("deck.toml:3: key 'cloud.metadata_url' = \"http://10.1.2.3:80\": 10.1.2.3 is neither loopback nor "
                   "link-local; spotrun polls only a loopback (127.0.0.0/8, [::1]) or link-local"),
            std::string::npos)
      << e;
  EXPECT_NE(error("[cloud]\nmetadata_url = \"http://metadata.google.internal\"\n").find("a name, not an IP address"),
            std::string::npos);
  EXPECT_NE(error("[cloud]\nprovider = \"ibm\"\n").find("'cloud.provider'"), std::string::npos);
  EXPECT_NE(error("[cloud]\npoll_seconds = 0\n").find("out of range"), std::string::npos);
  EXPECT_NE(error("[cloud]\npoll_seconds = 5000\n").find("out of range"), std::string::npos);
  EXPECT_NE(error("[cloud]\nmetadata_url = \"http://127.0.0.1\\u0000@10.0.0.1\"\n").find("control character"),
            std::string::npos);
  EXPECT_EQ(error("[cloud]\nprovider = \"auto\"\nmetadata_url = \"\"\npoll_seconds = 0.25\n"), "");
  EXPECT_EQ(error("[cloud]\nprovider = \"gcp\"\nmetadata_url = \"http://127.0.0.1:9999\"\n"), "");
  // Every key has its default in the resolved deck; none of them is physics (they may change on resume).
  const Deck d = Deck::parse("", "deck.toml");
  EXPECT_NE(d.resolved().find("[cloud]\nprovider = \"none\"\npoll_seconds = 5.0\nmetadata_url = \"\"\n"),
            std::string::npos)
      << d.resolved();
  EXPECT_EQ(d.physics().find("cloud."), std::string::npos);
}

// --- the provider from DMI ----------------------------------------------------------------------------

TEST(Provider, DetectedFromDmiWithoutNetwork) {
  const fs::path dir = fs::temp_directory_path() / ("spotrun-dmi-" + std::to_string(::getpid()));
  auto dmi = [&](std::initializer_list<std::pair<const char*, const char*>> fields) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (const auto& [name, value] : fields) std::ofstream(dir / name) << value << "\n";
    return detect_provider(dir.string());
  };
  DmiDetection d = dmi({{"sys_vendor", "Amazon EC2"}, {"product_name", "m5.large"}, {"bios_vendor", "Amazon EC2"}});
  EXPECT_EQ(d.provider, Provider::aws);
  EXPECT_EQ(d.evidence, "sys_vendor \"Amazon EC2\"");
  d = dmi({{"sys_vendor", "Xen"}, {"bios_vendor", "Amazon EC2"}});  // older Xen instances: the BIOS says it
  EXPECT_EQ(d.provider, Provider::aws);
  d = dmi({{"sys_vendor", "Google"}, {"product_name", "Google Compute Engine"}, {"bios_vendor", "Google"}});
  EXPECT_EQ(d.provider, Provider::gcp);
  d = dmi({{"sys_vendor", "Microsoft Corporation"}, {"product_name", "Virtual Machine"},
           {"bios_vendor", "Microsoft Corporation"}});
  EXPECT_EQ(d.provider, Provider::azure);
  EXPECT_EQ(d.evidence, "sys_vendor \"Microsoft Corporation\", product_name \"Virtual Machine\"");
  d = dmi({{"sys_vendor", "Microsoft Corporation"}, {"product_name", "Surface Laptop"}});
  EXPECT_EQ(d.provider, Provider::none);
  d = dmi({{"sys_vendor", "QEMU"}, {"product_name", "Standard PC (i440FX + PIIX, 1996)"}});
  EXPECT_EQ(d.provider, Provider::none);
  EXPECT_EQ(d.evidence, "no cloud provider in DMI: sys_vendor \"QEMU\", product_name \"Standard PC (i440FX + PIIX, 1996)\"");
  d = dmi({{"sys_vendor", "Dell\x01\xff Inc."}});
  EXPECT_EQ(d.evidence, "no cloud provider in DMI: sys_vendor \"Dell?? Inc.\"");
  fs::remove_all(dir);
  d = detect_provider(dir.string());
  EXPECT_EQ(d.provider, Provider::none);
  EXPECT_EQ(d.evidence, "no DMI data in " + dir.string());
  EXPECT_EQ(provider_from_name("auto"), Provider::none);
  EXPECT_EQ(provider_from_name("azure"), Provider::azure);
}

// --- deadlines --------------------------------------------------------------------------------------------

TEST(Deadline, ParsesRfc3339AndHttpDates) {
  EXPECT_EQ(parse_rfc3339("1970-01-01T00:00:00Z"), std::time_t{0});
  // The epoch seconds of GNU date -u -d TIME +%s.
  EXPECT_EQ(parse_rfc3339("2026-11-30T12:00:00Z"), std::time_t{1796040000});
  EXPECT_EQ(parse_rfc3339("2026-11-30T12:00:00.123456Z"), std::time_t{1796040000});
  EXPECT_EQ(parse_rfc3339("2026-11-30T13:30:00+01:30"), std::time_t{1796040000});
  EXPECT_EQ(parse_rfc3339("2024-02-29T00:00:00Z"), std::time_t{1709164800});
  for (const char* bad : {"", "2026-11-30", "2026-11-30 12:00:00Z", "2026-11-30T12:00:00", "2026-11-30T12:00:00ZZ",
                          "2026-13-01T00:00:00Z", "2025-02-29T00:00:00Z", "2026-11-31T00:00:00Z", "2026-11-30T24:00:00Z",
                          "2026-11-30T12:60:00Z", "2026-11-30T12:00:00.Z", "+2026-11-30T12:00:00Z", "2026-1a-30T12:00:00Z",
                          "1969-12-31T23:59:59Z", "2026-11-30T12:00:00+1:00"})
    EXPECT_FALSE(parse_rfc3339(bad)) << bad;
  EXPECT_EQ(parse_http_date("Mon, 30 Nov 2026 12:00:00 GMT"), std::time_t{1796040000});
  EXPECT_EQ(parse_http_date("Mon, 19 Sep 2016 18:29:47 GMT"), std::time_t{1474309787});
  for (const char* bad : {"", "Mon, 30 Nov 2026 12:00:00 UTC", "Mon 30 Nov 2026 12:00:00 GMT", "Mon, 30 Nox 2026 12:00:00 GMT",
                          "Mon, 31 Nov 2026 12:00:00 GMT", "Xyz, 30 Nov 2026 12:00:00 GMT", "Mon, 30 Nov 2026 12:00:00 GMT "})
    EXPECT_FALSE(parse_http_date(bad)) << bad;
  EXPECT_EQ(format_utc(1796040000), "2026-11-30T12:00:00Z");
  EXPECT_EQ(printable(std::string("a\r\nb\0c", 6)), "a??b?c");
  EXPECT_EQ(printable(std::string(100, 'x'), 4), "xxxx...");
}

TEST(Deadline, DescribedWithTheTimeLeft) {
  SpotNotice n;
  n.provider = Provider::aws;
  n.action = "terminate";
  n.deadline = k_deadline;
  EXPECT_EQ(describe(n, k_deadline - 93), "aws: terminate at 2026-11-30T12:00:00Z, 93 s from now");
  EXPECT_EQ(describe(n, k_deadline + 5), "aws: terminate at 2026-11-30T12:00:00Z, 5 s ago");
  n.provider = Provider::azure;
  n.action = "Preempt";
  EXPECT_EQ(describe(n, k_deadline - 25), "azure: Preempt not before 2026-11-30T12:00:00Z, 25 s from now");
  n.provider = Provider::gcp;
  n.action = "preempted";
  n.deadline_estimated = true;
  n.noticed_at = k_deadline - 30;
  EXPECT_EQ(describe(n, k_deadline - 27),
            "gcp: preempted, expected at 2026-11-30T12:00:00Z (30 s after the notice), 27 s from now");
  n = SpotNotice{};
  n.provider = Provider::aws;
  n.action = "stop";
  n.deadline_text = "soon";
  EXPECT_EQ(describe(n, 0), "aws: stop at \"soon\" (not a time spotrun reads)");
}

// --- (a) each provider's notice format ----------------------------------------------------------------------

TEST(PollAws, NoNoticeThenNoticeWithTheTokenOfImdsV2) {
  FakeAws aws;
  std::atomic<bool> notice{false};
  aws.instance_action = [&] {
    return notice ? HttpReply::make(200, R"({"action": "terminate", "time": "2026-11-30T12:00:00Z"})")
                  : HttpReply::make(404, "Not Found");
  };
  HttpServer server(aws);
  NoticePoller poller(Provider::aws, endpoint_of(server));
  PollResult r = poller.poll(k_deadline - 200);
  EXPECT_EQ(r.outcome, Outcome::none) << r.error;
  EXPECT_FALSE(r.rebalance);
  auto seen = server.requests();
  ASSERT_EQ(seen.size(), 3u);  // token, instance-action, rebalance
  EXPECT_EQ(seen[0].method, "PUT");
  EXPECT_EQ(seen[0].target, "/latest/api/token");
  EXPECT_EQ(seen[0].header("x-aws-ec2-metadata-token-ttl-seconds"), "300");
  EXPECT_FALSE(seen[0].has_header("expect"));
  EXPECT_EQ(seen[1].method, "GET");
  EXPECT_EQ(seen[1].target, "/latest/meta-data/spot/instance-action");
  EXPECT_EQ(seen[1].header("x-aws-ec2-metadata-token"), aws.token);
  EXPECT_EQ(seen[2].target, "/latest/meta-data/events/recommendations/rebalance");
  EXPECT_EQ(seen[2].header("x-aws-ec2-metadata-token"), aws.token);
  // The token is kept while it lives: the next poll asks no new one.
  r = poller.poll(k_deadline - 150);
  EXPECT_EQ(r.outcome, Outcome::none) << r.error;
  EXPECT_EQ(server.request_count(), 5u);
  notice = true;
  r = poller.poll(k_deadline - 93);
  ASSERT_EQ(r.outcome, Outcome::notice) << r.error;
  EXPECT_EQ(server.request_count(), 6u);  // no rebalance question after a notice
  EXPECT_EQ(r.notice.provider, Provider::aws);
  EXPECT_EQ(r.notice.action, "terminate");
  EXPECT_EQ(r.notice.deadline, k_deadline);
  EXPECT_EQ(describe(r.notice, k_deadline - 93), "aws: terminate at 2026-11-30T12:00:00Z, 93 s from now");
  // Near its end (k_aws_token_ttl - k_aws_token_renew after it was issued) a new token is asked.
  r = poller.poll(k_deadline - 200 + NoticePoller::k_aws_token_ttl - NoticePoller::k_aws_token_renew);
  EXPECT_EQ(r.outcome, Outcome::notice);
  seen = server.requests();
  EXPECT_EQ(seen[6].method, "PUT");
}

TEST(PollAws, StopAndHibernateAreNoticesToo) {
  for (const char* action : {"stop", "hibernate"}) {
    FakeAws aws;
    aws.instance_action = [&] {
      return HttpReply::make(200, std::string(R"({"action": ")") + action + R"(", "time": "2026-11-30T12:00:00Z"})");
    };
    HttpServer server(aws);
    NoticePoller poller(Provider::aws, endpoint_of(server));
    const PollResult r = poller.poll(k_deadline - 120);
    ASSERT_EQ(r.outcome, Outcome::notice) << r.error;
    EXPECT_EQ(r.notice.action, action);
  }
}

TEST(PollAws, RebalanceRecommendationIsAWarningNotANotice) {
  FakeAws aws;
  aws.rebalance = [] { return HttpReply::make(200, R"({"noticeTime": "2026-11-30T11:50:00Z"})"); };
  HttpServer server(aws);
  NoticePoller poller(Provider::aws, endpoint_of(server));
  const PollResult r = poller.poll(k_deadline - 600);
  EXPECT_EQ(r.outcome, Outcome::none) << r.error;
  ASSERT_TRUE(r.rebalance);
  EXPECT_EQ(*r.rebalance, "2026-11-30T11:50:00Z");
}

TEST(PollAws, RefusedOrOddTokensFailThePoll) {
  {  // IMDS answers 401 (the token expired early): the poll fails, the next one asks a new token.
    FakeAws aws;
    std::atomic<int> gets{0};
    aws.instance_action = [&] { return ++gets == 1 ? HttpReply::make(401) : HttpReply::make(404); };
    HttpServer server(aws);
    NoticePoller poller(Provider::aws, endpoint_of(server));
    PollResult r = poller.poll(1000);
    EXPECT_EQ(r.outcome, Outcome::failed);
    EXPECT_NE(r.error.find("HTTP 401"), std::string::npos) << r.error;
    r = poller.poll(1005);
    EXPECT_EQ(r.outcome, Outcome::none) << r.error;
    std::size_t puts = 0;
    for (const auto& q : server.requests()) puts += q.method == "PUT";
    EXPECT_EQ(puts, 2u);
  }
  for (const std::string& token : {std::string("evil\r\nX-Injected: 1"), std::string(), std::string(5000, 'a')}) {
    HttpServer server([&](const HttpRequestSeen& r) {
      return r.method == "PUT" ? HttpReply::make(200, token) : HttpReply::make(200, R"({"action": "terminate"})");
    });
    NoticePoller poller(Provider::aws, endpoint_of(server));
    const PollResult r = poller.poll(1000);
    EXPECT_EQ(r.outcome, Outcome::failed);
    EXPECT_NE(r.error.find("not a token"), std::string::npos) << r.error;
    EXPECT_EQ(server.request_count(), 1u);  // no GET with it
  }
  HttpServer forbidden([](const HttpRequestSeen&) { return HttpReply::make(403, "Forbidden"); });
  NoticePoller poller(Provider::aws, endpoint_of(forbidden));
  const PollResult r = poller.poll(1000);
  EXPECT_EQ(r.outcome, Outcome::failed);
  EXPECT_EQ(r.error, "PUT /latest/api/token: HTTP 403");
}

TEST(PollGcp, PreemptedTrueIsANoticeWithAbout30Seconds) {
  std::atomic<bool> preempted{false};
  HttpServer server([&](const HttpRequestSeen& r) {
    if (r.header("metadata-flavor") != "Google") return HttpReply::make(403, "Missing Metadata-Flavor:Google header.");
    if (r.target != "/computeMetadata/v1/instance/preempted") return HttpReply::make(404);
    return HttpReply::make(200, preempted ? "TRUE" : "FALSE");
  });
  NoticePoller poller(Provider::gcp, endpoint_of(server));
  PollResult r = poller.poll(k_deadline - 60);
  EXPECT_EQ(r.outcome, Outcome::none) << r.error;
  preempted = true;
  r = poller.poll(k_deadline - 30);
  ASSERT_EQ(r.outcome, Outcome::notice) << r.error;
  EXPECT_EQ(r.notice.deadline, k_deadline);
  EXPECT_TRUE(r.notice.deadline_estimated);
  EXPECT_EQ(describe(r.notice, k_deadline - 28),
            "gcp: preempted, expected at 2026-11-30T12:00:00Z (30 s after the notice), 28 s from now");
  for (const auto& q : server.requests()) EXPECT_EQ(q.method, "GET");
  HttpServer odd([](const HttpRequestSeen&) { return HttpReply::make(200, "<html>captive portal</html>"); });
  NoticePoller odd_poller(Provider::gcp, endpoint_of(odd));
  r = odd_poller.poll(0);
  EXPECT_EQ(r.outcome, Outcome::failed);
  EXPECT_NE(r.error.find("expected TRUE or FALSE, got \"<html>captive portal</html>\""), std::string::npos) << r.error;
}

TEST(PollAzure, PreemptEventIsANoticeWithItsNotBefore) {
  std::string events = R"({"DocumentIncarnation": 0, "Events": []})";
  std::mutex m;
  HttpServer server([&](const HttpRequestSeen& r) {
    if (r.header("metadata") != "true") return HttpReply::make(400, "Bad Request");
    if (r.target == "/metadata/scheduledevents?api-version=2020-07-01") {
      std::lock_guard<std::mutex> lock(m);
      return HttpReply::make(200, events);
    }
    if (r.target == "/metadata/instance/compute/name?api-version=2020-09-01&format=text")
      return HttpReply::make(200, "this-vm");
    return HttpReply::make(404);
  });
  NoticePoller poller(Provider::azure, endpoint_of(server));
  auto set = [&](const std::string& e) {
    std::lock_guard<std::mutex> lock(m);
    events = e;
  };
  PollResult r = poller.poll(k_deadline - 60);
  EXPECT_EQ(r.outcome, Outcome::none) << r.error;
  // A maintenance event is no preemption.
  set(R"({"DocumentIncarnation": 1, "Events": [{"EventId": "1", "EventType": "Freeze", "ResourceType": "VirtualMachine",
        "Resources": ["this-vm"], "EventStatus": "Scheduled", "NotBefore": "Mon, 30 Nov 2026 12:00:00 GMT"}]})");
  r = poller.poll(k_deadline - 60);
  EXPECT_EQ(r.outcome, Outcome::none) << r.error;
  // Another VM's preemption (events reach every VM of a scale set) is not ours.
  set(R"({"DocumentIncarnation": 2, "Events": [{"EventId": "2", "EventType": "Preempt", "ResourceType": "VirtualMachine",
        "Resources": ["other-vm"], "EventStatus": "Scheduled", "NotBefore": "Mon, 30 Nov 2026 12:00:00 GMT"}]})");
  r = poller.poll(k_deadline - 60);
  EXPECT_EQ(r.outcome, Outcome::none) << r.error;
  set(R"({"DocumentIncarnation": 3, "Events": [{"EventId": "3", "EventType": "Preempt", "ResourceType": "VirtualMachine",
        "Resources": ["other-vm", "this-vm"], "EventStatus": "Scheduled", "NotBefore": "Mon, 30 Nov 2026 12:00:00 GMT",
        "Description": "", "EventSource": "Platform", "DurationInSeconds": -1}]})");
  r = poller.poll(k_deadline - 25);
  ASSERT_EQ(r.outcome, Outcome::notice) << r.error;
  EXPECT_EQ(r.notice.deadline, k_deadline);
  EXPECT_EQ(describe(r.notice, k_deadline - 25), "azure: Preempt not before 2026-11-30T12:00:00Z, 25 s from now");
  // The VM's name is asked once.
  std::size_t name_asked = 0;
  for (const auto& q : server.requests()) name_asked += q.path() == "/metadata/instance/compute/name";
  EXPECT_EQ(name_asked, 1u);
  // No NotBefore yet: Azure's 30 s from the notice.
  set(R"({"Events": [{"EventType": "Preempt", "Resources": [], "NotBefore": ""}]})");
  r = poller.poll(k_deadline - 30);
  ASSERT_EQ(r.outcome, Outcome::notice) << r.error;
  EXPECT_EQ(r.notice.deadline, k_deadline);
  EXPECT_TRUE(r.notice.deadline_estimated);
}

// --- (b) hostile and broken services: bounded in time and memory, never a notice ----------------------------

TEST(Hostile, HugeBodyIsCutAtTheLimit) {
  for (bool announced : {true, false}) {
    FakeAws aws;
    aws.instance_action = [announced] {
      HttpReply r = HttpReply::misbehave(HttpReply::Kind::huge_body);  // 1 GiB
      r.announce_length = announced;
      return r;
    };
    HttpServer server(aws);
    NoticePoller poller(Provider::aws, endpoint_of(server));
    const auto t = Clock::now();
    const PollResult r = poller.poll(1000);
    const double s = since(t);
    EXPECT_EQ(r.outcome, Outcome::failed);
    EXPECT_NE(r.error.find("body larger than 65536 bytes: transfer aborted"), std::string::npos) << r.error;
    EXPECT_LT(s, 2.5);
    server.stop();
    // What left the server before the client hung up: the socket buffers' worth, not the gigabyte.
    EXPECT_LT(server.body_bytes_sent(), 64u << 20);
    spotrun::test::report("huge body (Content-Length " + std::string(announced ? "announced" : "absent") +
                          "): poll failed in " + std::to_string(s) + " s, " + std::to_string(server.body_bytes_sent()) +
                          " bytes sent by the server: " + r.error);
  }
}

TEST(Hostile, EndlessBodyTimesOutAndTheNextPollWorks) {
  std::atomic<bool> hostile{true};
  FakeAws aws;
  aws.instance_action = [&] {
    return hostile ? HttpReply::misbehave(HttpReply::Kind::endless_body) : HttpReply::make(404);
  };
  HttpServer server(aws);
  NoticePoller poller(Provider::aws, endpoint_of(server));
  auto t = Clock::now();
  PollResult r = poller.poll(1000);
  const double s = since(t);
  EXPECT_EQ(r.outcome, Outcome::failed);
  EXPECT_NE(r.error.find("timed out"), std::string::npos) << r.error;
  EXPECT_GT(s, 1.9);
  EXPECT_LT(s, 3.0);
  const std::string error = r.error;
  hostile = false;
  t = Clock::now();
  r = poller.poll(1001);
  EXPECT_EQ(r.outcome, Outcome::none) << r.error;
  EXPECT_LT(since(t), 1.0);
  spotrun::test::report("endless body: poll failed in " + std::to_string(s) + " s (" + error + "), the next took " +
                        std::to_string(r.seconds) + " s");
}

TEST(Hostile, SilentServerTimesOut) {
  for (Provider p : {Provider::aws, Provider::gcp, Provider::azure}) {
    HttpServer server([](const HttpRequestSeen&) { return HttpReply::misbehave(HttpReply::Kind::silent); });
    NoticePoller poller(p, endpoint_of(server));
    const auto t = Clock::now();
    const PollResult r = poller.poll(1000);
    const double s = since(t);
    EXPECT_EQ(r.outcome, Outcome::failed);
    EXPECT_NE(r.error.find("timed out"), std::string::npos) << r.error;
    EXPECT_LT(s, 3.0);
    spotrun::test::report(std::string("silent server (") + provider_name(p) + "): poll failed in " + std::to_string(s) +
                          " s: " + r.error);
  }
}

TEST(Hostile, SlowButInTimeIsFine) {
  FakeAws aws;
  aws.instance_action = [] {
    HttpReply r = HttpReply::make(200, R"({"action": "terminate", "time": "2026-11-30T12:00:00Z"})");
    r.delay_seconds = 0.5;
    return r;
  };
  HttpServer server(aws);
  NoticePoller poller(Provider::aws, endpoint_of(server));
  EXPECT_EQ(poller.poll(1000).outcome, Outcome::notice);
}

TEST(Hostile, MalformedAnswersAreFailuresNotNotices) {
  const std::string deep = std::string(30000, '[') + std::string(30000, ']');
  for (const std::string& body : {std::string("{\"action\": \"terminate\", "), std::string("not json at all"),
                                 std::string(R"({"action": 5, "time": []})"), std::string(R"(["terminate"])"),
                                 std::string("{\"action\": \"\xff\xfe\"}"), std::string(R"({"time": "2026-11-30T12:00:00Z"})"),
                                 deep, std::string("\0\0\0", 3)}) {
    FakeAws aws;
    aws.instance_action = [&] { return HttpReply::make(200, body); };
    HttpServer server(aws);
    NoticePoller poller(Provider::aws, endpoint_of(server));
    const PollResult r = poller.poll(1000);
    EXPECT_EQ(r.outcome, Outcome::failed) << body.substr(0, 40);
    EXPECT_NE(r.error.find("not the JSON object"), std::string::npos) << r.error;
    EXPECT_LT(r.error.size(), 300u);  // the body is quoted clipped
  }
  for (const std::string& body : {std::string("{"), deep, std::string(R"({"Events": {"EventType": "Preempt"}})"),
                                 std::string(R"({"Events": [1, "Preempt", null, {"EventType": 7}]})")}) {
    HttpServer server([&](const HttpRequestSeen&) { return HttpReply::make(200, body); });
    NoticePoller poller(Provider::azure, endpoint_of(server));
    const PollResult r = poller.poll(1000);
    EXPECT_NE(r.outcome, Outcome::notice) << body.substr(0, 40);
  }
  // An action with a time spotrun cannot read is still a notice (the deadline is then unknown).
  FakeAws aws;
  aws.instance_action = [] { return HttpReply::make(200, R"({"action": "terminate", "time": "tomorrow\r\n"})"); };
  HttpServer server(aws);
  NoticePoller poller(Provider::aws, endpoint_of(server));
  const PollResult r = poller.poll(1000);
  ASSERT_EQ(r.outcome, Outcome::notice);
  EXPECT_EQ(describe(r.notice, 1000), "aws: terminate at \"tomorrow??\" (not a time spotrun reads)");
}

TEST(Hostile, RedirectElsewhereIsNotFollowed) {
  // The other address is another loopback one, with a server of its own that counts what reaches it.
  HttpServer elsewhere([](const HttpRequestSeen&) {
    return HttpReply::make(200, R"({"action": "terminate", "time": "2026-11-30T12:00:00Z"})");
  }, "127.0.0.2");
  FakeAws aws;
  aws.instance_action = [&] {
    HttpReply r = HttpReply::make(302);
    r.headers = {{"Location", elsewhere.url() + "/latest/meta-data/spot/instance-action"}};
    return r;
  };
  HttpServer server(aws);
  NoticePoller poller(Provider::aws, endpoint_of(server));
  const PollResult r = poller.poll(1000);
  EXPECT_EQ(r.outcome, Outcome::failed);
  EXPECT_EQ(r.error, "GET /latest/meta-data/spot/instance-action: HTTP 302");
  EXPECT_EQ(elsewhere.connections(), 0u);
}

TEST(Hostile, HugeHeadersAreCut) {
  FakeAws aws;
  aws.instance_action = [] {
    HttpReply r = HttpReply::make(404);
    for (int k = 0; k < 40; ++k) r.headers.emplace_back("X-Filler-" + std::to_string(k), std::string(1000, 'h'));
    return r;
  };
  HttpServer server(aws);
  NoticePoller poller(Provider::aws, endpoint_of(server));
  const PollResult r = poller.poll(1000);
  EXPECT_EQ(r.outcome, Outcome::failed);
  EXPECT_NE(r.error.find("headers larger than 16384 bytes"), std::string::npos) << r.error;
}

TEST(Hostile, NothingListening) {
  int port = 0;
  {
    HttpServer gone([](const HttpRequestSeen&) { return HttpReply::make(404); });
    port = gone.port();
  }
  NoticePoller poller(Provider::gcp, *parse_metadata_url("http://127.0.0.1:" + std::to_string(port)));
  const auto t = Clock::now();
  const PollResult r = poller.poll(1000);
  EXPECT_EQ(r.outcome, Outcome::failed);
  EXPECT_LT(since(t), 1.5);
  spotrun::test::report("nothing listening: " + r.error);
}

// --- the watcher thread --------------------------------------------------------------------------------------

TEST(Watcher, SeesANoticeThenStopsPolling) {
  std::atomic<bool> notice{false};
  FakeAws aws;
  aws.instance_action = [&] {
    return notice ? HttpReply::make(200, R"({"action": "terminate", "time": "2026-11-30T12:00:00Z"})")
                  : HttpReply::make(404);
  };
  HttpServer server(aws);
  WatcherSettings s;
  s.provider = Provider::aws;
  s.endpoint = endpoint_of(server);
  s.poll_seconds = 0.05;
  s.quiet = true;
  NoticeWatcher watcher(s);
  const auto t0 = Clock::now();
  while (watcher.polls() < 3 && since(t0) < 10) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_GE(watcher.polls(), 3);
  EXPECT_FALSE(watcher.noticed());
  EXPECT_FALSE(watcher.notice());
  notice = true;
  const auto t1 = Clock::now();
  while (!watcher.noticed() && since(t1) < 10) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(watcher.noticed());
  const double seen_after = since(t1);
  EXPECT_LT(seen_after, 1.0);
  ASSERT_TRUE(watcher.notice());
  EXPECT_EQ(watcher.notice()->action, "terminate");
  const std::size_t requests = server.request_count();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(server.request_count(), requests);  // no polling after the notice
  EXPECT_EQ(watcher.failures(), 0);
  spotrun::test::report("watcher: notice seen " + std::to_string(seen_after) + " s after it appeared (poll every 0.05 s)");
}

TEST(Watcher, HostileServerNeverBlocksItsOwner) {
  // The owner (the time loop) reads the flag while the thread is stuck in a transfer that never ends (a
  // trickling body, a server that never answers); the destructor cancels the transfer instead of waiting for
  // its time limit.
  for (const auto kind : {HttpReply::Kind::endless_body, HttpReply::Kind::silent}) {
    HttpServer server([kind](const HttpRequestSeen& r) {
      return r.method == "PUT" ? HttpReply::make(200, "token") : HttpReply::misbehave(kind);
    });
    WatcherSettings s;
    s.provider = Provider::aws;
    s.endpoint = endpoint_of(server);
    s.poll_seconds = 0.05;
    s.quiet = true;
    s.limits.total_timeout_ms = 30000;  // far longer than the test: only cancelling can end the transfer
    double slowest_read = 0;
    auto watcher = std::make_unique<NoticeWatcher>(s);
    const auto t0 = Clock::now();
    while (server.request_count() < 2 && since(t0) < 10) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(server.request_count(), 2u);  // the token, then the GET that never ends
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    for (int k = 0; k < 1000; ++k) {
      const auto t = Clock::now();
      EXPECT_FALSE(watcher->noticed());
      slowest_read = std::max(slowest_read, since(t));
    }
    const auto t = Clock::now();
    watcher.reset();
    const double destroy = since(t);
    EXPECT_LT(slowest_read, 0.01);
    EXPECT_LT(destroy, 2.5);
    spotrun::test::report(std::string("watcher stuck in ") +
                          (kind == HttpReply::Kind::silent ? "a transfer never answered" : "an endless body") +
                          ": flag read in at most " + std::to_string(slowest_read) + " s, stopped in " +
                          std::to_string(destroy) + " s");
  }
}
