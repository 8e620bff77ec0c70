#pragma once
// The message of the InputError a piece of code throws, for the tests of error messages.
#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <string>

#include "comm/errors.hpp"

namespace spotrun::test {

// The InputError message of f(), or a test failure (and "") when f() throws another exception or none.
inline std::string input_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected InputError, got another exception: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected InputError, nothing was thrown";
  return {};
}

}  // namespace spotrun::test
