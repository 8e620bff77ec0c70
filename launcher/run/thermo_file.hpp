#pragma once
// OUTDIR/thermo.csv of a resumed run: kept up to the step it resumes from (launcher/run/run.cpp's set-up).
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace spotrun::launcher {

// Keeps the thermo rows up to `step` (a resumed run continues the file from there): rows with another
// number of fields than the header (a row torn by a full disk) go too. The file is replaced atomically
// (a stop signal meanwhile leaves the old one). Collective; InputError when it cannot be rewritten, or when
// its columns are not `columns` (the deck's thermo columns changed since: md.thermo_style).
void truncate_thermo(const comm::Communicator& comm, const std::string& path, std::int64_t step,
                     const std::vector<std::string>& columns);

}  // namespace spotrun::launcher
