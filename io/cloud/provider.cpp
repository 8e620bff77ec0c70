#include "provider.hpp"

#include <cstdlib>
#include <fstream>
#include <iterator>

namespace spotrun::cloud {

const char* provider_name(Provider provider) {
  switch (provider) {
    case Provider::aws: return "aws";
    case Provider::gcp: return "gcp";
    case Provider::azure: return "azure";
    case Provider::none: break;
  }
  return "none";
}

std::vector<std::string> provider_choices() { return {"none", "auto", "aws", "gcp", "azure"}; }

Provider provider_from_name(const std::string& name) {
  for (Provider p : {Provider::aws, Provider::gcp, Provider::azure})
    if (name == provider_name(p)) return p;
  return Provider::none;
}

namespace {

// One DMI field: its first line, at most 256 bytes, trailing blanks dropped; "" when absent.
std::string read_field(const std::string& dir, const char* name) {
  std::ifstream in(dir + "/" + name, std::ios::binary);
  if (!in) return {};
  std::string text(256, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  text = text.substr(0, text.find('\n'));
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.pop_back();
  // Printable ASCII only: it goes into the run header.
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return text;
}

}  // namespace

DmiDetection detect_provider(const std::string& dmi_dir) {
  const char* names[] = {"sys_vendor", "product_name", "bios_vendor", "board_vendor"};
  std::string value[4];
  for (int k = 0; k < 4; ++k) value[k] = read_field(dmi_dir, names[k]);
  auto field = [&](int k) { return std::string(names[k]) + " \"" + value[k] + "\""; };
  DmiDetection d;
  for (int k = 0; k < 4; ++k)
    if (value[k].find("Amazon EC2") != std::string::npos) {
      d.provider = Provider::aws;
      d.evidence = field(k);
      return d;
    }
  if (value[0] == "Google" || value[3] == "Google" || value[1] == "Google Compute Engine") {
    d.provider = Provider::gcp;
    d.evidence = field(value[0] == "Google" ? 0 : value[3] == "Google" ? 3 : 1);
    return d;
  }
  if (value[0] == "Microsoft Corporation" && value[1] == "Virtual Machine") {
    d.provider = Provider::azure;
    d.evidence = field(0) + ", " + field(1);
    return d;
  }
  std::string read;
  for (int k = 0; k < 4; ++k)
    if (!value[k].empty()) read += (read.empty() ? "" : ", ") + field(k);
  d.evidence = read.empty() ? "no DMI data in " + dmi_dir : "no cloud provider in DMI: " + read;
  return d;
}

}  // namespace spotrun::cloud
