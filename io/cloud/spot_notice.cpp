#include "spot_notice.hpp"

#include <cstdio>

namespace spotrun::cloud {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
long long days_from_civil(long long y, unsigned m, unsigned d) {
  y -= m <= 2;
  const long long era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<long long>(doe) - 719468;
}

bool leap(long long y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

// n digits at text[at], as a number; -1 if they are not all digits.
long long number(const std::string& text, std::size_t at, std::size_t n) {
  if (at + n > text.size()) return -1;
  long long v = 0;
  for (std::size_t k = at; k < at + n; ++k) {
    if (text[k] < '0' || text[k] > '9') return -1;
    v = v * 10 + (text[k] - '0');
  }
  return v;
}

std::optional<std::time_t> make_time(long long y, long long mo, long long d, long long h, long long mi, long long s) {
  static const int days_in[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 60)
    return std::nullopt;
  if (d > days_in[mo - 1] + (mo == 2 && leap(y) ? 1 : 0)) return std::nullopt;
  const long long t = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 + h * 3600 +
                      mi * 60 + s;
  return static_cast<std::time_t>(t);
}

}  // namespace

std::optional<std::time_t> parse_rfc3339(const std::string& text) {
  // YYYY-MM-DDTHH:MM:SS
  if (text.size() < 20 || text[4] != '-' || text[7] != '-' || (text[10] != 'T' && text[10] != 't') ||
      text[13] != ':' || text[16] != ':')
    return std::nullopt;
  auto t = make_time(number(text, 0, 4), number(text, 5, 2), number(text, 8, 2), number(text, 11, 2),
                     number(text, 14, 2), number(text, 17, 2));
  if (!t) return std::nullopt;
  std::size_t at = 19;
  if (text[at] == '.') {
    ++at;
    const std::size_t start = at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9' && at - start < 9) ++at;
    if (at == start) return std::nullopt;
  }
  if (at + 1 == text.size() && (text[at] == 'Z' || text[at] == 'z')) return t;
  if (at + 6 == text.size() && (text[at] == '+' || text[at] == '-') && text[at + 3] == ':') {
    const long long oh = number(text, at + 1, 2), om = number(text, at + 4, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return std::nullopt;
    const long long offset = (oh * 3600 + om * 60) * (text[at] == '+' ? 1 : -1);
    return static_cast<std::time_t>(*t - offset);
  }
  return std::nullopt;
}

std::optional<std::time_t> parse_http_date(const std::string& text) {
  // "Mon, 30 Nov 2026 12:00:00 GMT": 29 characters exactly.
  static const char* const days[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
  static const char* const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (text.size() != 29 || text.compare(3, 2, ", ") != 0 || text[7] != ' ' || text[11] != ' ' || text[16] != ' ' ||
      text[19] != ':' || text[22] != ':' || text.compare(25, 4, " GMT") != 0)
    return std::nullopt;
  bool day_ok = false;
  for (const char* d : days) day_ok = day_ok || text.compare(0, 3, d) == 0;
  int month = 0;
  for (int m = 0; m < 12; ++m)
    if (text.compare(8, 3, months[m]) == 0) month = m + 1;
  if (!day_ok || month == 0) return std::nullopt;
  return make_time(number(text, 12, 4), month, number(text, 5, 2), number(text, 17, 2), number(text, 20, 2),
                   number(text, 23, 2));
}

std::string format_utc(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string printable(const std::string& text, std::size_t max_chars) {
  std::string out;
  for (char c : text) {
    if (out.size() >= max_chars) return out + "...";
    out += static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f ? c : '?';
  }
  return out;
}

std::string describe(const SpotNotice& n, std::time_t now) {
  std::string out = std::string(provider_name(n.provider)) + ": " + printable(n.action, 32);
  if (!n.deadline) return out + (n.deadline_text.empty() ? ", no deadline given" : " at \"" + n.deadline_text + "\" (not a time spotrun reads)");
  const long long left = static_cast<long long>(*n.deadline) - static_cast<long long>(now);
  const std::string when = left >= 0 ? std::to_string(left) + " s from now" : std::to_string(-left) + " s ago";
  if (n.deadline_estimated)
    return out + ", expected at " + format_utc(*n.deadline) + " (" +
           std::to_string(static_cast<long long>(*n.deadline - n.noticed_at)) + " s after the notice), " + when;
  return out + (n.provider == Provider::azure ? " not before " : " at ") + format_utc(*n.deadline) + ", " + when;
}

}  // namespace spotrun::cloud
