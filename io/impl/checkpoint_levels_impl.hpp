#pragma once
// Internals of multilevel checkpoints (io/checkpoint_levels.hpp) that its parts share: the local level and the
// index (checkpoint_levels.cpp, checkpoint_levels_index.cpp), the partner copy (checkpoint_levels_partner.cpp),
// the background writer (checkpoint_levels_background.cpp) and the reader (checkpoint_levels_read.cpp).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "io/checkpoint.hpp"
#include "io/checkpoint_levels.hpp"
#include "io/solver_state.hpp"

namespace spotrun::io::impl {

inline constexpr const char* k_index_magic = "spotrun-checkpoint-levels 1";
inline constexpr const char* k_level_magic = "spotrun-level 1";
inline constexpr std::uint64_t k_index_max_bytes = std::uint64_t(1) << 20;

// Seconds the calling thread has spent ready to run but waiting for a CPU (Linux's schedstat); -1 unknown.
double run_delay_seconds();
std::string hex16(std::uint64_t v);
std::string errno_text();
// fdatasync of a file, fsync of a directory; std::runtime_error naming it.
void fsync_path(const std::string& p, bool directory);
bool is_regular(const std::string& p);

// Strings packed with their lengths, for all_gather and broadcast of several texts at once.
void pack(std::string& out, const std::string& s);
std::string unpack(const std::string& in, std::size_t& at);
std::string pack_meta(const CheckpointMeta& m);
CheckpointMeta unpack_meta(const std::string& s, std::size_t& at);
std::string pack_scalars(const SolverState& st);
void unpack_scalars(const std::string& s, SolverState& st);

// /meta/level of a node file: which rows of the run's arrays it holds.
struct LevelBlock {
  std::uint64_t global_first = 0, rows = 0, node_first = 0;
};
struct NodeLevel {
  std::string set, host;
  int node = -1, nodes = 0;
  std::map<std::string, std::uint64_t> global_rows;       // per array
  std::map<std::string, std::vector<LevelBlock>> blocks;  // per array, by node_first
};
NodeLevel parse_level(const std::string& text);  // std::runtime_error saying what is wrong

// A node line of the index ("node K HOST FILE SIZE ID PARTNER"), and back.
LevelFile parse_entry(const std::string& line, int& node);
std::string entry_line(int node, const LevelFile& f);

// Leader of node k: sends its node file to the next node's leader and keeps the previous node's file as a
// partner copy in DIRECTORY/partner (checkpoint_levels_partner.cpp). Returns "" or what failed.
std::string exchange_with_partner(const NodeGroups& nodes, const std::string& directory, const LevelFile& own,
                                  const std::string& own_path, const std::string& own_manifest);

}  // namespace spotrun::io::impl
