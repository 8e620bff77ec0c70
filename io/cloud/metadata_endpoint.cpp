#include "metadata_endpoint.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace spotrun::cloud {

std::string MetadataEndpoint::url(const std::string& path) const {
  return "http://" + host + ":" + std::to_string(port) + base_path + path;
}

namespace {

const char* const k_allowed =
    "spotrun polls only a loopback (127.0.0.0/8, [::1]) or link-local (169.254.0.0/16, [fe80::/10]) "
    "address, written as an IP literal (the metadata services listen on 169.254.169.254; leave the key "
    "out for that)";

bool digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// Strict dotted decimal: four parts of 1-3 digits, no leading zero (an "010" is octal to some parsers),
// each <= 255.
std::optional<unsigned> parse_ipv4(const std::string& s) {
  unsigned value = 0;
  int parts = 0;
  std::size_t at = 0;
  while (true) {
    const std::size_t dot = s.find('.', at);
    const std::string part = s.substr(at, dot == std::string::npos ? std::string::npos : dot - at);
    if (!digits(part) || part.size() > 3 || (part.size() > 1 && part[0] == '0')) return std::nullopt;
    const unsigned p = static_cast<unsigned>(std::stoul(part));
    if (p > 255) return std::nullopt;
    value = value << 8 | p;
    if (++parts > 4) return std::nullopt;
    if (dot == std::string::npos) break;
    at = dot + 1;
  }
  if (parts != 4) return std::nullopt;
  return value;
}

}  // namespace

std::optional<MetadataEndpoint> parse_metadata_url(const std::string& url, std::string* why) {
  auto refuse = [&](const std::string& reason) -> std::optional<MetadataEndpoint> {
    if (why) *why = reason;
    return std::nullopt;
  };
  const std::string scheme = "http://";
  if (url.size() < scheme.size() ||
      !std::equal(scheme.begin(), scheme.end(), url.begin(), [](char a, char b) {
        return a == std::tolower(static_cast<unsigned char>(b));
      }))
    return refuse("not an http:// URL; " + std::string(k_allowed));
  std::string rest = url.substr(scheme.size());
  const std::size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  std::string path = slash == std::string::npos ? "" : rest.substr(slash);
  if (authority.find('@') != std::string::npos) return refuse("a user name in the URL is not allowed");
  for (char c : path)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-._~/", c)))
      return refuse("the path may hold letters, digits and -._~/ only (no query, fragment or escapes)");
  while (!path.empty() && path.back() == '/') path.pop_back();

  MetadataEndpoint e;
  e.base_path = path;
  std::string host, port;
  if (!authority.empty() && authority[0] == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string::npos) return refuse("an IPv6 address without its closing ']'");
    host = authority.substr(1, close - 1);
    const std::string after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return refuse("unexpected text after the IPv6 address");
      port = after.substr(1);
      if (port.empty()) return refuse("an empty port");
    }
    std::string zone;
    const std::size_t pct = host.find('%');
    if (pct != std::string::npos) {
      if (host.compare(pct, 3, "%25") != 0) return refuse("an IPv6 zone is written %25 and an interface name");
      zone = host.substr(pct + 3);
      host = host.substr(0, pct);
      if (zone.empty()) return refuse("an empty IPv6 zone");
      for (char c : zone)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-._", c)))
          return refuse("an IPv6 zone (interface name) may hold letters, digits and -._ only");
    }
    unsigned char a[16];
    if (inet_pton(AF_INET6, host.c_str(), a) != 1) return refuse("'" + host + "' is not an IPv6 address");
    static const unsigned char loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    const bool is_loopback = std::memcmp(a, loopback, 16) == 0;
    const bool link_local = a[0] == 0xfe && (a[1] & 0xc0) == 0x80;
    if (!is_loopback && !link_local) return refuse("[" + host + "] is neither loopback nor link-local; " + k_allowed);
    if (!zone.empty() && !link_local) return refuse("a zone belongs to a link-local address only");
    e.host = "[" + host + (zone.empty() ? "" : "%25" + zone) + "]";
  } else {
    const std::size_t colon = authority.find(':');
    host = authority.substr(0, colon);
    if (colon != std::string::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) return refuse("an empty port");
    }
    if (host.empty()) return refuse("no address");
    const auto v4 = parse_ipv4(host);
    if (!v4) {
      const bool name = std::isalpha(static_cast<unsigned char>(host[0])) != 0;
      return refuse("'" + host + "' is " +
                    (name ? "a name, not an IP address (a name is looked up through DNS, which could send the "
                            "requests anywhere)"
                          : "not an IPv4 address in dotted decimal (four numbers 0-255, no leading zeros)") +
                    "; " + k_allowed);
    }
    const bool is_loopback = (*v4 >> 24) == 127;
    const bool link_local = (*v4 >> 16) == ((169u << 8) | 254u);
    if (!is_loopback && !link_local) return refuse(host + " is neither loopback nor link-local; " + k_allowed);
    e.host = host;
  }
  if (!port.empty()) {
    if (!digits(port) || port.size() > 5 || std::stoi(port) < 1 || std::stoi(port) > 65535)
      return refuse("port '" + port + "' is not a number from 1 to 65535");
    e.port = std::stoi(port);
  }
  return e;
}

std::string check_metadata_url(const std::string& url) {
  if (url.empty()) return {};
  std::string why;
  if (parse_metadata_url(url, &why)) return {};
  return why;
}

}  // namespace spotrun::cloud
