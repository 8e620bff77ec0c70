// The checkpoint directory from one node: write bandwidth (fsync included), fsync latency, free space.
#include "io/disk_probe.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace spotrun::io {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string errno_text() { return std::strerror(errno); }

// The median (the mean of the two middle values for an even count) of at least one value.
double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Writes all of [data, data + bytes) at `offset`; false with errno on failure.
bool write_all(int fd, const char* data, std::size_t bytes, off_t offset) {
  while (bytes > 0) {
    const ssize_t n = ::pwrite(fd, data, bytes, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    data += n;
    bytes -= static_cast<std::size_t>(n);
    offset += n;
  }
  return true;
}

// Bytes that do not compress (a file system that compresses or deduplicates zeros would look fast).
std::vector<char> noise(std::size_t bytes) {
  std::vector<char> out(bytes);
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  for (std::size_t i = 0; i + 8 <= bytes; i += 8) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(out.data() + i, &x, 8);
  }
  return out;
}

}  // namespace

DiskProbe probe_disk(const std::string& dir, const std::string& tag, const DiskSizes& sizes) {
  DiskProbe result;
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) != 0) {
    result.error = "cannot query the file system of " + dir + ": " + errno_text();
    return result;
  }
  const double free_bytes = static_cast<double>(vfs.f_bavail) * static_cast<double>(vfs.f_frsize);
  result.figures["disk.free_gib"] = free_bytes / (1024.0 * 1024.0 * 1024.0);

  const std::string path = dir + "/.spotrun-doctor-" + tag + ".tmp";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    result.error = "cannot write in " + dir + ": creating " + path + ": " + errno_text();
    return result;
  }
  std::string error;
  // At most a quarter of the free space, never less than one chunk.
  constexpr std::size_t k_min_chunk = 64 * 1024;
  const std::size_t target =
      std::max(k_min_chunk, std::min(sizes.bytes, static_cast<std::size_t>(std::max(0.0, free_bytes / 4))));
  const std::size_t chunk = std::min<std::size_t>(target, 4u << 20);
  const std::vector<char> data = noise(chunk);
  std::size_t written = 0;
  const auto t0 = Clock::now();
  while (error.empty() && written < target && (written == 0 || seconds_since(t0) < sizes.max_seconds)) {
    const std::size_t n = std::min(chunk, target - written);
    if (!write_all(fd, data.data(), n, static_cast<off_t>(written)))
      error = "writing " + path + " failed after " + std::to_string(written) + " bytes: " + errno_text();
    else
      written += n;
  }
  if (error.empty() && ::fsync(fd) != 0) error = "fsync of " + path + " failed: " + errno_text();
  const double seconds = seconds_since(t0);
  if (error.empty()) {
    result.written_bytes = static_cast<double>(written);
    result.figures["disk.write_mbs"] = static_cast<double>(written) / seconds / 1e6;
    // fsync latency: small writes past the end, each made durable on its own.
    std::vector<double> times;
    for (int k = 0; k < sizes.fsyncs && error.empty(); ++k) {
      const auto t = Clock::now();
      if (!write_all(fd, data.data(), 4096, static_cast<off_t>(written + 4096u * static_cast<std::size_t>(k))))
        error = "writing " + path + " failed: " + errno_text();
      else if (::fsync(fd) != 0)
        error = "fsync of " + path + " failed: " + errno_text();
      else
        times.push_back(seconds_since(t));
    }
    if (error.empty() && !times.empty()) result.figures["disk.fsync_ms"] = median(times) * 1e3;
  }
  if (::close(fd) != 0 && error.empty()) error = "closing " + path + " failed: " + errno_text();
  if (::unlink(path.c_str()) != 0 && error.empty()) error = "cannot remove " + path + ": " + errno_text();
  if (!error.empty()) {
    result.error = error;
    result.figures.erase("disk.write_mbs");
    result.figures.erase("disk.fsync_ms");
  }
  return result;
}

}  // namespace spotrun::io
