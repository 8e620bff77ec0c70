#pragma once
// The disk of a checkpoint directory as one node sees it (io/disk_probe.cpp): write bandwidth with fsync,
// fsync latency, free space. `spotrun doctor` (launcher/doctor/doctor.cpp) runs it on the first rank of
// every node and judges the figures, whose names are those of its report (launcher/doctor/verdicts.hpp).
// No MPI.
#include <cstddef>
#include <map>
#include <string>

namespace spotrun::io {

struct DiskSizes {
  std::size_t bytes = 256u << 20;  // the file written for the bandwidth (at most a quarter of the free space)
  double max_seconds = 10;         // writing stops after this long; the rate is of what was written
  int fsyncs = 10;                 // 4 KiB writes each followed by fsync; the median counts
};

// What one probe gave.
struct DiskProbe {
  std::map<std::string, double> figures;  // disk.write_mbs, disk.fsync_ms, disk.free_gib
  double written_bytes = 0;               // size of the file written for the bandwidth
  std::string error;                      // why the directory could not be measured or written
};

// Writes, fsyncs and removes a file `.spotrun-doctor-<tag>.tmp` in `dir` (which must exist): fills
// disk.write_mbs, disk.fsync_ms, disk.free_gib and written_bytes, or error (the directory cannot be
// written, no space, ...). Never throws.
DiskProbe probe_disk(const std::string& dir, const std::string& tag, const DiskSizes& sizes);

}  // namespace spotrun::io
