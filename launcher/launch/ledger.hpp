#pragma once
// The run report's ledger (OUTDIR/attempts.jsonl, docs/report.md) as `spotrun launch` annotates it: each
// attempt's line (its "launch_attempt") gets launch's verdict, "ended_by" (written by io::annotate_ledger,
// io/run_directory.hpp); the next attempt's report, or `spotrun report`, shows it.
#include <string>

#include "launcher/launch/attempt.hpp"

namespace spotrun::launcher::impl {

// Why attempt `a` ended, as the ledger says it: "grow: 2 -> 4 ranks", "stall: heartbeat stopped on H",
// "node lost: H", "spot notice: H", "stop request: SIGTERM", "rank lost: ...", or its state and reason.
// `stop_signal`: launch's first stop request, or 0.
std::string ended_by(const AttemptResult& a, int stop_signal);

}  // namespace spotrun::launcher::impl
