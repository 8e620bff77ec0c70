#include "launcher/slurm/submit.hpp"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <cctype>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <unistd.h>

#include "comm/errors.hpp"
#include "launcher/run/run.hpp"
#include "launcher/slurm/slurm_env.hpp"
// The job body (impl::k_sbatch_job_body), generated at build time from slurm/spotrun.sbatch.in, the one
// source of the body and of slurm/spotrun-cpu.sbatch and slurm/spotrun-gpu.sbatch.
#include "spotrun/sbatch_job_body.hpp"

namespace fs = std::filesystem;

namespace spotrun::launcher {
namespace {

// Plain Slurm names (partition, account, job name): letters, digits and . _ - + , (a comma separates
// several partitions); no leading '-'. Anything else could change the meaning of an #SBATCH line.
bool plain_slurm_name(const std::string& s) {
  static const std::regex re(R"([A-Za-z0-9._+][A-Za-z0-9._+,-]{0,127})");
  return std::regex_match(s, re);
}

bool has_control_char(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

// Characters Slurm and the shell read literally in an #SBATCH --output path (no spaces, no %, no quotes).
bool plain_path(const std::string& s) {
  static const std::regex re(R"([A-Za-z0-9._/+,=@-]+)");
  return std::regex_match(s, re) && s[0] != '-';
}

// A Slurm time limit in seconds: "minutes", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS";
// -1 for "UNLIMITED"/"INFINITE"; nullopt if malformed.
std::optional<long long> slurm_time_seconds(const std::string& t) {
  if (t == "UNLIMITED" || t == "INFINITE" || t == "unlimited" || t == "infinite") return -1;
  static const std::regex with_days(R"((\d{1,5})-(\d{1,2})(?::(\d{1,2}))?(?::(\d{1,2}))?)");
  static const std::regex plain(R"((\d{1,9})(?::(\d{1,2}))?(?::(\d{1,2}))?)");
  std::smatch m;
  auto num = [&](int k) { return m[k].matched ? std::stoll(m[k]) : 0LL; };
  if (std::regex_match(t, m, with_days)) return ((num(1) * 24 + num(2)) * 60 + num(3)) * 60 + num(4);
  if (std::regex_match(t, m, plain)) {
    if (!m[2].matched) return num(1) * 60;                          // minutes
    if (!m[3].matched) return num(1) * 60 + num(2);                 // minutes:seconds
    return (num(1) * 60 + num(2)) * 60 + num(3);                    // hours:minutes:seconds
  }
  return std::nullopt;
}

std::string sanitized_job_name(const std::string& stem) {
  std::string name = "spotrun-";
  for (char c : stem) name += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  if (name.size() > 64) name.resize(64);
  return name;
}

std::string self_executable() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

}  // namespace

std::string shell_quote(const std::string& value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

const std::string& sbatch_job_body() {
  static const std::string body = impl::k_sbatch_job_body;
  return body;
}

std::string check_submit_options(const SubmitOptions& o) {
  if (o.deck_path.empty()) return "no deck given";
  if (has_control_char(o.deck_path)) return "the deck path contains a control character (newline, tab, ...)";
  if (has_control_char(o.output_dir)) return "the output directory contains a control character (newline, tab, ...)";
  if (has_control_char(o.spotrun)) return "the spotrun path contains a control character";
  for (const auto& s : o.sets)
    if (has_control_char(s)) return "--set '" + s.substr(0, s.find_first_of("\r\n\t")) + "...' contains a control character";
  if (o.nodes < 1 || o.nodes > 100000) return "--nodes must be between 1 and 100000";
  if (o.gpus_per_node < 0 || o.gpus_per_node > 64) return "--gpus-per-node must be between 0 and 64";
  if (o.ntasks_per_node < 0 || o.ntasks_per_node > 4096) return "--ntasks-per-node must be between 0 and 4096";
  if (o.gpus_per_node > 0 && o.ntasks_per_node > 0 && o.ntasks_per_node != o.gpus_per_node)
    return "with --gpus-per-node, spotrun runs one rank per GPU: leave out --ntasks-per-node or make it equal";
  if (o.cpus_per_task < 0 || o.cpus_per_task > 4096) return "--cpus-per-task must be between 0 and 4096";
  if (o.max_requeues < 0 || o.max_requeues > 100000) return "--max-requeues must be between 0 and 100000";
  if (o.signal_lead < 0 || o.signal_lead > 65535) return "--signal-lead must be between 0 and 65535 seconds";
  if (!o.partition.empty() && !plain_slurm_name(o.partition))
    return "--partition '" + o.partition + "' is not a plain Slurm name (letters, digits, . _ - + ,)";
  if (!o.account.empty() && !plain_slurm_name(o.account))
    return "--account '" + o.account + "' is not a plain Slurm name (letters, digits, . _ - + ,)";
  if (!o.job_name.empty() && !plain_slurm_name(o.job_name))
    return "--job-name '" + o.job_name + "' is not a plain Slurm name (letters, digits, . _ - + ,)";
  if (!o.time.empty()) {
    auto secs = slurm_time_seconds(o.time);
    if (!secs)
      return "--time '" + o.time + "' is not a Slurm time limit (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS)";
    if (*secs == 0) return "--time must be longer than 0";
    if (*secs > 0 && o.signal_lead > 0 && 2LL * o.signal_lead >= *secs)
      return "--signal-lead (" + std::to_string(o.signal_lead) + " s) must be less than half the time limit (" +
             std::to_string(*secs) + " s); Slurm may send the signal up to 60 s before it is due";
  }
  return "";
}

std::string render_sbatch(const SubmitOptions& o) {
  const std::string problem = check_submit_options(o);
  if (!problem.empty()) throw InputError("spotrun submit: " + problem);
  const bool gpu = o.gpus_per_node > 0;
  const int tasks = gpu ? o.gpus_per_node : (o.ntasks_per_node > 0 ? o.ntasks_per_node : 1);
  const std::string job_name = o.job_name.empty() ? sanitized_job_name(fs::path(o.deck_path).stem().string()) : o.job_name;
  const std::string spotrun = o.spotrun.empty() ? std::string("spotrun") : o.spotrun;

  std::ostringstream s;
  s << "#!/bin/bash\n"
    << "# spotrun " << (gpu ? "GPU" : "CPU") << " job written by `spotrun submit` (see docs/slurm.md). Submit it\n"
    << "# with `sbatch FILE`; sbatch options on the command line override the #SBATCH lines below.\n"
    << "# The job checkpoints on SIGUSR1 (before the time limit, on preemption), requeues itself while it\n"
    << "# was requeued fewer than MAX_REQUEUES times, and resumes from the newest checkpoint in OUTDIR.\n";
  s << "#SBATCH --job-name=" << job_name << "\n";
  s << "#SBATCH --nodes=" << o.nodes << "\n";
  s << "#SBATCH --ntasks-per-node=" << tasks << "\n";
  if (gpu) s << "#SBATCH --gpus-per-node=" << o.gpus_per_node << "\n";
  if (o.cpus_per_task > 0) s << "#SBATCH --cpus-per-task=" << o.cpus_per_task << "\n";
  if (!o.time.empty()) s << "#SBATCH --time=" << o.time << "\n";
  if (!o.partition.empty()) s << "#SBATCH --partition=" << o.partition << "\n";
  if (!o.account.empty()) s << "#SBATCH --account=" << o.account << "\n";
  s << "#SBATCH --requeue\n";
  if (o.signal_lead > 0) s << "#SBATCH --signal=B:USR1@" << o.signal_lead << "\n";
  s << "#SBATCH --open-mode=append\n";
  if (plain_path(o.output_dir))
    s << "#SBATCH --output=" << o.output_dir << "/slurm-%j.out\n";
  else
    s << "#SBATCH --output=slurm-%x-%j.out\n";
  s << "\n";
  s << "SPOTRUN=" << shell_quote(spotrun) << "\n";
  s << "DECK=" << shell_quote(o.deck_path) << "\n";
  s << "OUTDIR=" << shell_quote(o.output_dir.empty() ? std::string("runs/") + fs::path(o.deck_path).stem().string()
                                                     : o.output_dir)
    << "\n";
  s << "MAX_REQUEUES=" << o.max_requeues << "\n";
  s << "RUN_ARGS=(";
  for (std::size_t k = 0; k < o.sets.size(); ++k) s << (k ? " " : "") << "--set " << shell_quote(o.sets[k]);
  s << ")\n";
  s << "# MPI wire-up of srun: PMIx by default; SPOTRUN_SRUN_MPI=pmi2 (or empty: the cluster's default) at sbatch time\n";
  s << "SRUN_ARGS=()\n";
  s << "[ -z \"${SPOTRUN_SRUN_MPI-pmix}\" ] || SRUN_ARGS+=(--mpi=\"${SPOTRUN_SRUN_MPI-pmix}\")\n";
  if (gpu)
    s << "# Every rank sees the node's GPUs and is not bound by srun: spotrun picks the GPU and the cores near it.\n"
      << "[ -z \"${SPOTRUN_GPU_BIND:-}\" ] || SRUN_ARGS+=(--gpu-bind=\"$SPOTRUN_GPU_BIND\")\n"
      << "SRUN_ARGS+=(--cpu-bind=\"${SPOTRUN_SRUN_CPU_BIND:-none}\")\n";
  s << "\n" << sbatch_job_body();
  return s.str();
}

void add_submit_options(CLI::App& sub, SubmitOptions& o) {
  sub.add_option("deck", o.deck_path, "Deck file (TOML)")->required();
  sub.add_option("--nodes", o.nodes, "Nodes")->default_val(1);
  sub.add_option("--gpus-per-node", o.gpus_per_node,
                 "GPUs per node; spotrun runs one rank per GPU, bound to cores near it (--gpus-per-node=G). 0: CPU job")
      ->default_val(0);
  sub.add_option("--ntasks-per-node", o.ntasks_per_node, "CPU job: MPI ranks per node (default 1)");
  sub.add_option("--cpus-per-task", o.cpus_per_task, "CPU cores per rank (OMP_NUM_THREADS); default: the cluster's");
  sub.add_option("--time", o.time, "Time limit of each run of the job: minutes, HH:MM:SS or D-HH:MM:SS");
  sub.add_option("--partition", o.partition, "Slurm partition(s)");
  sub.add_option("--account", o.account, "Slurm account");
  sub.add_option("--job-name", o.job_name, "Job name (default: spotrun-<deck stem>)");
  sub.add_option("--max-requeues", o.max_requeues,
                 "The job requeues itself after a checkpointed stop while it was requeued fewer times than this")
      ->default_val(20);
  sub.add_option("--signal-lead", o.signal_lead,
                 "Seconds before the time limit at which Slurm sends SIGUSR1 (checkpoint and requeue); 0: none")
      ->default_val(120);
  sub.add_option("--set", o.sets, "Override a deck key: section.key=value (repeatable; passed on to spotrun run)");
  sub.add_option("--output-dir", o.output_dir, "Output directory (default: run.output_dir or runs/<deck stem>)");
  sub.add_option("--spotrun", o.spotrun, "spotrun binary the job runs (default: this one)");
  sub.add_flag("--dry-run", o.dry_run, "Print the batch script instead of submitting it");
}

int submit(const comm::Communicator& comm, const SubmitOptions& given) {
  SubmitOptions o = given;
  // Refuse hostile values before anything reads them; then check the deck like `spotrun run` would.
  {
    const std::string problem = check_submit_options(o);
    comm.agree<InputError>(problem.empty(), "spotrun submit: " + problem);
  }
  Deck deck = load_deck(comm, o.deck_path, o.sets);
  std::string error;
  if (o.output_dir.empty()) o.output_dir = deck.get_string("run.output_dir");
  if (o.output_dir.empty()) o.output_dir = (fs::path("runs") / fs::path(o.deck_path).stem()).string();
  std::error_code ec;
  o.deck_path = fs::absolute(o.deck_path, ec).lexically_normal().string();
  o.output_dir = fs::absolute(o.output_dir, ec).lexically_normal().string();
  while (o.output_dir.size() > 1 && o.output_dir.back() == '/') o.output_dir.pop_back();
  if (o.spotrun.empty()) o.spotrun = self_executable();
  if (o.spotrun.empty()) o.spotrun = "spotrun";
  else if (o.spotrun.find('/') != std::string::npos) o.spotrun = fs::absolute(o.spotrun, ec).lexically_normal().string();

  std::string script;
  try {
    script = render_sbatch(o);
  } catch (const InputError& e) {
    error = e.what();
  }
  comm.agree<InputError>(error.empty(), error);

  if (o.dry_run) {
    if (comm.is_root()) {
      std::fputs(script.c_str(), stdout);
      std::fflush(stdout);
      if (!fs::is_directory(o.output_dir, ec) && plain_path(o.output_dir))
        std::fprintf(stderr, "Note: the job log goes to %s/slurm-<job id>.out; create that directory before sbatch.\n",
                     o.output_dir.c_str());
    }
    return k_exit_finished;
  }

  int code = k_exit_finished;
  if (comm.is_root()) {
    const fs::path file = fs::path(o.output_dir) / "spotrun-job.sbatch";
    fs::create_directories(o.output_dir, ec);
    if (ec) {
      error = "cannot create output directory '" + o.output_dir + "': " + ec.message();
      code = k_exit_bad_input;
    } else {
      std::ofstream out(file, std::ios::trunc);
      out << script;
      out.close();
      if (!out) {
        error = "cannot write " + file.string();
        code = k_exit_failure;
      }
    }
    if (error.empty()) {
      std::string err;
      auto answer = run_command({"sbatch", "--parsable", file.string()}, 120, &err);
      if (!answer) {
        error = "sbatch failed: " + err;
        code = k_exit_failure;
      } else {
        std::string id = *answer;
        id = id.substr(0, id.find_first_of(";\r\n"));
        std::printf("Submitted batch job %s\n  script: %s\n  deck: %s\n  output directory: %s\n", id.c_str(),
                    file.c_str(), o.deck_path.c_str(), o.output_dir.c_str());
        std::printf("  follow it with: squeue -j %s; history of its runs: %s/slurm-history.log\n", id.c_str(),
                    o.output_dir.c_str());
        std::fflush(stdout);
      }
    }
    if (!error.empty()) std::fprintf(stderr, "ERROR: %s\n", error.c_str());
  }
  int c = code;
  SPOTRUN_MPI_CHECK(MPI_Bcast(&c, 1, MPI_INT, 0, comm.mpi()));
  return c;
}

}  // namespace spotrun::launcher
