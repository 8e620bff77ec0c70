// A shared library loaded at run time (shared_library.hpp).
#include "shared_library.hpp"

#include <dlfcn.h>

#include <utility>

namespace spotrun::comm {

SharedLibrary SharedLibrary::open(const std::string& name) {
  SharedLibrary lib;
  lib.m_name = name;
  lib.m_handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib.m_handle) {
    const char* why = ::dlerror();
    lib.m_error = why ? why : "dlopen failed";
  }
  return lib;
}

SharedLibrary::~SharedLibrary() { close(); }

SharedLibrary::SharedLibrary(SharedLibrary&& other) noexcept
    : m_handle(std::exchange(other.m_handle, nullptr)),
      m_name(std::move(other.m_name)),
      m_error(std::move(other.m_error)),
      m_keep(other.m_keep) {}

SharedLibrary& SharedLibrary::operator=(SharedLibrary&& other) noexcept {
  if (this != &other) {
    close();
    m_handle = std::exchange(other.m_handle, nullptr);
    m_name = std::move(other.m_name);
    m_error = std::move(other.m_error);
    m_keep = other.m_keep;
  }
  return *this;
}

void* SharedLibrary::address(const char* symbol) const { return m_handle ? ::dlsym(m_handle, symbol) : nullptr; }

void SharedLibrary::close() {
  if (m_handle && !m_keep) ::dlclose(m_handle);
  m_handle = nullptr;
}

}  // namespace spotrun::comm
