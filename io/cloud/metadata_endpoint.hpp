#pragma once
// The address of a metadata service, as the deck key cloud.metadata_url gives it. spotrun sends requests
// only to a loopback (127.0.0.0/8, ::1) or link-local (169.254.0.0/16, fe80::/10) address, written as an
// IP literal: a name would go through DNS (which could answer anything), and any other address is not a
// metadata service of the node it runs on.
#include <optional>
#include <string>

namespace spotrun::cloud {

struct MetadataEndpoint {
  std::string host;       // as it goes into a URL: "169.254.169.254", "[::1]", "[fe80::1%25eth0]"
  int port = 80;
  std::string base_path;  // "" or "/prefix" (no trailing slash); request paths are appended to it
  // "http://HOST:PORT" + base_path + path (path starts with '/').
  std::string url(const std::string& path) const;
};

// Parses "http://ADDRESS[:PORT][/PATH]". ADDRESS: an IPv4 literal in dotted decimal (four parts, no
// leading zeros) in 127.0.0.0/8 or 169.254.0.0/16, or a bracketed IPv6 literal ::1 or in fe80::/10 (a
// link-local one may carry a zone, "%25" and an interface name). PATH: letters, digits and -._~/ only;
// no user name, query or fragment. On refusal returns nullopt and *why says why, in words for an error
// message about the deck key.
std::optional<MetadataEndpoint> parse_metadata_url(const std::string& url, std::string* why = nullptr);

// The check of the deck key cloud.metadata_url: "" when the value is accepted ("" itself: the
// provider's default), else why not.
std::string check_metadata_url(const std::string& url);

}  // namespace spotrun::cloud
