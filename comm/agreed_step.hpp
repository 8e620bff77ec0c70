#pragma once
// Collective verdicts on a step that may fail on some ranks only (a local check, an allocation, one
// call with I/O): every rank runs it, then all ranks agree on the outcome before the next collective, so
// either every rank goes on or every rank throws the same error.
#include <functional>
#include <string>

#include "communicator.hpp"

namespace spotrun::comm {

// Runs f on every rank; returns "" when it succeeded on every rank, else the message of the lowest rank
// that failed (the same text on every rank).
std::string agreed_failure(const Communicator& comm, const std::function<void()>& f);

// Runs f on every rank; if it failed on any rank, every rank throws ErrorT(prefix + message).
template <class ErrorT>
void agreed_step(const Communicator& comm, const std::string& prefix, const std::function<void()>& f) {
  const std::string failure = agreed_failure(comm, f);
  if (!failure.empty()) throw ErrorT(prefix + failure);
}

}  // namespace spotrun::comm
