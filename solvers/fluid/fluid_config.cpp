#include "fluid_config.hpp"

#include "comm/errors.hpp"

namespace spotrun::fluid {

InitKind parse_init(const std::string& name) {
  if (name == "taylor-green") return InitKind::TaylorGreen;
  if (name == "taylor-green-2d") return InitKind::TaylorGreen2d;
  if (name == "random") return InitKind::Random;
  throw InputError("fluid.init '" + name + "' is not known; allowed: \"taylor-green\", \"taylor-green-2d\", \"random\"");
}

Forcing parse_forcing(const std::string& name) {
  if (name == "none") return Forcing::None;
  if (name == "linear") return Forcing::Linear;
  throw InputError("fluid.forcing '" + name + "' is not known; allowed: \"none\", \"linear\"");
}

Dealias parse_dealias(const std::string& name) {
  if (name == "two-thirds") return Dealias::TwoThirds;
  if (name == "none") return Dealias::None;
  throw InputError("fluid.dealias '" + name + "' is not known; allowed: \"two-thirds\", \"none\"");
}

FftBatch parse_fft_batch(const std::string& name) {
  if (name == "auto") return FftBatch::Auto;
  if (name == "fields") return FftBatch::Fields;
  if (name == "none") return FftBatch::None;
  throw InputError("fluid.fft_batch '" + name + "' is not known; allowed: \"auto\", \"fields\", \"none\"");
}

std::string to_string(InitKind k) {
  switch (k) {
    case InitKind::TaylorGreen: return "taylor-green";
    case InitKind::TaylorGreen2d: return "taylor-green-2d";
    case InitKind::Random: return "random";
  }
  return "?";
}

std::string to_string(Forcing f) { return f == Forcing::Linear ? "linear" : "none"; }
std::string to_string(Dealias d) { return d == Dealias::None ? "none" : "two-thirds"; }

}  // namespace spotrun::fluid
