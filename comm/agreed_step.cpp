#include "agreed_step.hpp"

#include <new>
#include <stdexcept>

namespace spotrun::comm {

std::string agreed_failure(const Communicator& comm, const std::function<void()>& f) {
  bool ok = true;
  std::string message;
  try {
    f();
  } catch (const std::bad_alloc&) {
    ok = false;
    message = "out of memory";
  } catch (const std::exception& e) {
    ok = false;
    message = e.what();
  }
  try {
    comm.agree<std::runtime_error>(ok, message);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return {};
}

}  // namespace spotrun::comm
