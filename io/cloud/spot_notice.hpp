#pragma once
// A spot notice: the provider's word that it takes the instance back soon, with the deadline it gave.
#include <ctime>
#include <optional>
#include <string>

#include "provider.hpp"

namespace spotrun::cloud {

struct SpotNotice {
  Provider provider = Provider::none;
  std::string action;                  // "terminate", "stop", "hibernate" (aws), "preempted" (gcp), "Preempt" (azure)
  std::optional<std::time_t> deadline; // when the instance goes (UTC), when known
  bool deadline_estimated = false;     // no deadline given: the provider's usual notice after it was seen (gcp)
  std::string deadline_text;           // the deadline as the service wrote it (printable, clipped), when unread
  std::time_t noticed_at = 0;          // when spotrun saw it
};

// GCP gives no deadline: about 30 s pass between the preemption notice and the stop (ACPI G2 soft off).
inline constexpr int k_gcp_notice_seconds = 30;
// Azure's Preempt events: NotBefore is at least 30 s after the event appears; used when it is empty.
inline constexpr int k_azure_notice_seconds = 30;

// "aws: terminate at 2026-11-30T12:00:00Z, 93 s from now"; "gcp: preempted, expected at ... (30 s after
// the notice), 27 s from now"; "azure: Preempt not before ..., 25 s from now". A deadline that is past says
// "N s ago"; one that could not be read is quoted as given.
std::string describe(const SpotNotice& notice, std::time_t now);

// "2026-11-30T12:00:00Z" (RFC 3339 / ISO 8601 in UTC: 'Z' or an offset +HH:MM, optional fractional
// seconds, which are dropped); nullopt for anything else.
std::optional<std::time_t> parse_rfc3339(const std::string& text);
// "Mon, 30 Nov 2026 12:00:00 GMT" (RFC 1123, as HTTP and Azure's NotBefore write it); nullopt otherwise.
std::optional<std::time_t> parse_http_date(const std::string& text);
// A UTC time as "2026-11-30T12:00:00Z".
std::string format_utc(std::time_t t);
// Text from a metadata service made fit for a log line: printable ASCII (others as '?'), at most max_chars
// (then "...").
std::string printable(const std::string& text, std::size_t max_chars = 64);

}  // namespace spotrun::cloud
