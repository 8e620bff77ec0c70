#include "comm/test_hooks.hpp"

#include <utility>

namespace spotrun::comm {

namespace {
TestHooks& installed() {
  static TestHooks hooks;
  return hooks;
}
}  // namespace

void set_test_hooks(TestHooks hooks) { installed() = std::move(hooks); }
const TestHooks& test_hooks() { return installed(); }

}  // namespace spotrun::comm
