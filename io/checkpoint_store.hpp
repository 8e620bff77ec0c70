#pragma once
// The two kinds of checkpoint behind one interface: a checkpoint is opened by its name (io/run_directory.hpp:
// "*.levels" is a level set's index, anything else one shared file), and whoever reads it -- a resume,
// inspect, export -- sees an io::CheckpointSource (io/checkpoint.hpp) and never asks which kind it is.
// The launcher's store (launcher/run/checkpoint_store.hpp) writes, lists, chooses and prunes them.
#include <memory>
#include <string>

#include "checkpoint.hpp"
#include "comm/communicator.hpp"
#include "run_directory.hpp"

namespace spotrun::io {

// The kind of the checkpoint at `path`, by its name: a level set's index ends in ".levels".
CheckpointKind checkpoint_kind_of(const std::string& path);

// Opens the checkpoint at `path` for reading (collective): a CheckpointReader, or a LevelSetReader over the
// ranks grouped into nodes by host name (comm::host_name()). durable_dir: where a durable set's node files
// were downloaded on each node ("" = none; a level set only). InputError on every rank when it is refused.
std::unique_ptr<CheckpointSource> open_checkpoint(const comm::Communicator& comm, const std::string& path,
                                                  const std::string& durable_dir = "");

}  // namespace spotrun::io
