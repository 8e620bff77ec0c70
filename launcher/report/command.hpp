#pragma once
// `spotrun report` (docs/report.md): the run report of an output directory, read back. The report's model
// and the recorder of `spotrun run` are io/report/.
#include <string>

#include "comm/communicator.hpp"

namespace spotrun::report {

// `spotrun report OUTDIR [--json] [--png FILE]` (root rank does the work): prints the summary (or the JSON)
// of the report derived from OUTDIR's ledger; --png draws the timeline with /usr/bin/python3 and
// matplotlib. Returns 0, or 2 (no ledger, bad option) / 1 (the PNG could not be drawn).
int report_command(const comm::Communicator& comm, const std::string& outdir, bool json, const std::string& png);

}  // namespace spotrun::report
