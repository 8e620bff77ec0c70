#pragma once
// A shared library loaded at run time (dlopen), not linked: spotrun's one loader, for NCCL
// (comm/nccl_library.cpp), NVML (io/report/gpu_sampler.cpp) and OpenBLAS
// (comm/probes/probe_cpu.cpp). The handle closes the library when it goes (unless keep() was called),
// cannot be copied, and looks functions up by name into typed pointers.
#include <stdexcept>
#include <string>

namespace spotrun::comm {

class SharedLibrary {
 public:
  SharedLibrary() = default;
  // Loads `name` (RTLD_NOW | RTLD_LOCAL) where the dynamic loader finds it (LD_LIBRARY_PATH, its cache, a
  // path); loaded() is false and error() the loader's reason when it cannot.
  static SharedLibrary open(const std::string& name);
  ~SharedLibrary();
  SharedLibrary(SharedLibrary&& other) noexcept;
  SharedLibrary& operator=(SharedLibrary&& other) noexcept;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  bool loaded() const { return m_handle != nullptr; }
  const std::string& name() const { return m_name; }
  // Why open() failed: the loader's message (it names the file), or "dlopen failed".
  const std::string& error() const { return m_error; }

  // Function `symbol` as a pointer of type Fn, or nullptr when the library has none.
  template <class Fn>
  Fn find(const char* symbol) const {
    return reinterpret_cast<Fn>(address(symbol));
  }
  // Function `symbol` into `fn`; when the library has none, `fn` is null and the name is added to
  // `missing` (", " between names): a table of functions is looked up whole, then its gaps named at once.
  template <class Fn>
  bool look_up(Fn& fn, const char* symbol, std::string& missing) const {
    fn = find<Fn>(symbol);
    if (!fn) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
    return fn != nullptr;
  }
  // Function `symbol`, or std::runtime_error "NAME has no function SYMBOL" (or "NAME is not loaded").
  template <class Fn>
  Fn symbol(const char* symbol) const {
    if (!m_handle) throw std::runtime_error(m_name + " is not loaded");
    const Fn fn = find<Fn>(symbol);
    if (!fn) throw std::runtime_error(m_name + " has no function " + symbol);
    return fn;
  }

  // Leaves the library loaded for the rest of the process: the handle no longer closes it.
  void keep() { m_keep = true; }

 private:
  void* address(const char* symbol) const;
  void close();
  void* m_handle = nullptr;
  std::string m_name, m_error;
  bool m_keep = false;
};

}  // namespace spotrun::comm
