// What spotrun reads from Slurm about its job: the end time (slurm_job.hpp).
#include "io/slurm_job.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <regex>

#include "io/child_process.hpp"

namespace spotrun::io {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

double seconds_until(std::time_t end) { return std::difftime(end, std::time(nullptr)); }

}  // namespace

std::optional<std::time_t> parse_slurm_timestamp(const std::string& text) {
  static const std::regex re(R"((\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2}))");
  std::smatch m;
  const std::string t = trim(text);
  if (!std::regex_match(t, m, re)) return std::nullopt;
  std::tm tm{};
  tm.tm_year = std::stoi(m[1]) - 1900;
  tm.tm_mon = std::stoi(m[2]) - 1;
  tm.tm_mday = std::stoi(m[3]);
  tm.tm_hour = std::stoi(m[4]);
  tm.tm_min = std::stoi(m[5]);
  tm.tm_sec = std::stoi(m[6]);
  tm.tm_isdst = -1;  // Slurm prints local time; let the C library decide on daylight saving time
  if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
      tm.tm_sec > 60)
    return std::nullopt;
  const std::time_t t_end = std::mktime(&tm);
  if (t_end == static_cast<std::time_t>(-1)) return std::nullopt;
  return t_end;
}

std::optional<std::time_t> parse_scontrol_end_time(const std::string& out) {
  // Fields are separated by spaces or newlines; "EndTime=" is preceded by whitespace or starts a line.
  static const std::regex re(R"((^|\s)EndTime=(\S+))");
  std::smatch m;
  if (!std::regex_search(out, m, re)) return std::nullopt;
  return parse_slurm_timestamp(m[2]);
}

std::optional<double> slurm_seconds_left(const std::string& job_id, std::string* note) {
  if (job_id.empty()) return std::nullopt;
  const std::string& id = job_id;
  if (id.find_first_not_of("0123456789_") != std::string::npos) {
    if (note) *note = "SLURM_JOB_ID '" + id + "' is not a job id";
    return std::nullopt;
  }
  constexpr double k_timeout = 10;
  std::string err1, err2;
  if (auto out = run_command({"squeue", "-h", "-j", id, "-o", "%e"}, k_timeout, &err1)) {
    const std::string text = trim(*out);
    if (auto end = parse_slurm_timestamp(text)) return seconds_until(*end);
    // squeue answered but the job has no end time (no time limit: "N/A", "NONE", ...)
    if (!text.empty() && text.find('\n') == std::string::npos) {
      if (note) *note = "job " + id + " has no time limit (squeue: end time " + text + ")";
      return std::nullopt;
    }
    err1 = "squeue printed '" + text + "'";
  }
  if (auto out = run_command({"scontrol", "show", "job", id}, k_timeout, &err2)) {
    if (auto end = parse_scontrol_end_time(*out)) return seconds_until(*end);
    if (note) *note = "job " + id + " has no end time (scontrol show job)";
    return std::nullopt;
  }
  if (note) *note = "cannot read the end time of Slurm job " + id + ": " + err1 + "; " + err2;
  return std::nullopt;
}

double time_limit_with_slurm(const comm::Communicator& comm, double deck_limit, double start_wtime,
                             const std::string& job_id) {
  double left = -1e300;  // none
  if (comm.is_root()) {
    std::string note;
    if (auto s = slurm_seconds_left(job_id, &note)) {
      left = *s;
      std::printf("Slurm job %s ends in %.0f s: stopping with a checkpoint at least %.0f s before\n",
                  job_id.c_str(), left, k_slurm_exit_margin);
    } else if (!note.empty()) {
      std::printf("Slurm: %s\n", note.c_str());
    }
    std::fflush(stdout);
  }
  SPOTRUN_MPI_CHECK(MPI_Bcast(&left, 1, MPI_DOUBLE, 0, comm.mpi()));
  if (left == -1e300) return deck_limit;
  // At least a millisecond: 0 would mean "no limit" to the run loop.
  const double slurm_limit = std::max(1e-3, (MPI_Wtime() - start_wtime) + left - k_slurm_exit_margin);
  return deck_limit > 0 ? std::min(deck_limit, slurm_limit) : slurm_limit;
}

}  // namespace spotrun::io
