#pragma once
// Cloud providers whose spot (preemptible) instances spotrun watches, and how a node tells which one it
// runs on: from the machine's DMI data in /sys/class/dmi/id, without a network call (docs/cloud.md).
#include <string>
#include <vector>

namespace spotrun::cloud {

enum class Provider { none, aws, gcp, azure };

// "none", "aws", "gcp", "azure".
const char* provider_name(Provider provider);
// The values of the deck key cloud.provider: "none", "auto", "aws", "gcp", "azure".
std::vector<std::string> provider_choices();
// The provider a deck names ("aws", "gcp", "azure"; anything else, "auto" included, is none).
Provider provider_from_name(const std::string& name);

// Every provider's metadata service listens on this link-local address (GCP's metadata.google.internal
// and Azure's IMDS included); the default of cloud.metadata_url.
inline constexpr const char* k_default_metadata_url = "http://169.254.169.254";

// What the DMI data of a node says.
struct DmiDetection {
  Provider provider = Provider::none;
  std::string evidence;  // the fields that decided it, e.g. `sys_vendor "Amazon EC2"`, or what was read
};

// Reads sys_vendor, product_name, bios_vendor and board_vendor under dmi_dir: "Amazon EC2" in any of them
// is aws, "Google" (vendor) or "Google Compute Engine" (product) is gcp, "Microsoft Corporation" with the
// product "Virtual Machine" is azure; anything else, or no DMI data, is none. Only reads files.
DmiDetection detect_provider(const std::string& dmi_dir);
// The DMI directory of this machine (tests name another through comm::TestHooks::dmi_directory).
inline constexpr const char* k_dmi_directory = "/sys/class/dmi/id";

}  // namespace spotrun::cloud
