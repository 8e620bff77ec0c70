#pragma once
// Numbers as text for messages, reports and files: one place, through fmt, whose "g" and "f" give the
// same text as printf's %.<n>g and %.<n>f (and as an iostream's default and fixed notation). Shared by
// every component (comm is the lowest layer; spotrun_comm links fmt).
#include <fmt/format.h>

#include <string>

namespace spotrun {

// v with `digits` significant digits, as printf's %.<digits>g writes it ("0.000123", "1.23e+06").
inline std::string significant(double v, int digits) { return ::fmt::format("{:.{}g}", v, digits); }

// v with `decimals` digits after the point, as printf's %.<decimals>f writes it.
inline std::string fixed(double v, int decimals) { return ::fmt::format("{:.{}f}", v, decimals); }

// v with 17 significant digits: read back, it is the same double (files, messages on bitwise equality).
inline std::string exact(double v) { return significant(v, 17); }

}  // namespace spotrun
