// GPU binding and the NCCL transport (comm/device.hpp, comm/impl/transport_nccl.hpp, docs/gpu.md): every
// rank's device gathered with host and node-local rank as MPI_Comm_split_type has them; the rules of the
// binding, of GPU sharing and of the transport choice on made-up inputs (two ranks on one UUID, MIG
// instances, a GPU without a rank, builds with and without NCCL or CUDA); the NCCL transport's all-to-all
// batch on device buffers where there is one GPU per rank. GPU tests skip without a GPU and fail instead
// when SPOTRUN_REQUIRE_GPU=1. At 1, 2 and 3 ranks.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "comm/cpu_binding.hpp"
#include "comm/device.hpp"
#include "comm/nccl_library.hpp"
#include "comm/shared_library.hpp"
#include "comm/exchange.hpp"
#include "comm/impl/transport_nccl.hpp"
#include "comm/staging.hpp"
#include "comm/transport.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1, 2, 3);

using namespace spotrun;

namespace {

constexpr bool k_device_build =
    !Kokkos::SpaceAccessibility<Kokkos::HostSpace, Kokkos::DefaultExecutionSpace::memory_space>::accessible;

bool gpu_required() {
  const char* require = std::getenv("SPOTRUN_REQUIRE_GPU");
  return require && std::string(require) == "1";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

comm::DeviceInfo gpu(int rank, int node, const std::string& host, int index, const std::string& uuid,
                     const std::string& bus, std::vector<std::string> visible) {
  comm::DeviceInfo d;
  d.rank = rank;
  d.node = node;
  d.host = host;
  d.local_rank = rank - node;
  d.gpu = index;
  d.uuid = uuid;
  d.name = "NVIDIA H200";
  d.mig = uuid.rfind("MIG-", 0) == 0;
  d.memory_bytes = 150ull << 30;
  d.cc_major = 9;
  d.pci_bus_id = bus;
  d.visible = std::move(visible);
  return d;
}

const std::string k_a = "GPU-aaaaaaaa-0000-0000-0000-000000000001";
const std::string k_b = "GPU-bbbbbbbb-0000-0000-0000-000000000002";

// ---- every rank's device, gathered ------------------------------------------------------------------------

TEST(DeviceInfo, GathersEveryRankWithHostAndLocalRankOfTheSharedMemorySplit) {
  const auto devices = comm::gather_devices(test::world());
  const comm::DeviceBinding binding = comm::bind_device(MPI_COMM_WORLD);
  // What MPI says about this rank: host, node (its lowest rank), rank on the node.
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, test::rank(), MPI_INFO_NULL, &node);
  int lowest = test::rank();
  MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, node);
  MPI_Comm_free(&node);

  ASSERT_EQ(devices.size(), static_cast<std::size_t>(test::nranks()));
  std::map<int, std::vector<int>> local_ranks_of_node;
  for (int r = 0; r < test::nranks(); ++r) {
    EXPECT_EQ(devices[r].rank, r);
    EXPECT_FALSE(devices[r].host.empty());
    local_ranks_of_node[devices[r].node].push_back(devices[r].local_rank);
  }
  // Every node's ranks numbered 0..n-1, each once.
  EXPECT_EQ(static_cast<int>(local_ranks_of_node.size()), test::world().node_count());
  for (auto& [n, ranks] : local_ranks_of_node) {
    std::sort(ranks.begin(), ranks.end());
    for (std::size_t i = 0; i < ranks.size(); ++i) EXPECT_EQ(ranks[i], static_cast<int>(i)) << "node of rank " << n;
  }
  const comm::DeviceInfo& mine = devices[test::rank()];
  EXPECT_EQ(mine.host, std::string(name, len));
  EXPECT_EQ(mine.node, lowest);
  EXPECT_EQ(mine.local_rank, binding.local_rank);
  EXPECT_EQ(binding.local_size, test::world().local_size());
  // Unless a launcher numbers the node's ranks otherwise, the local rank is the split's.
  if (binding.local_rank_from == "MPI_Comm_split_type") {
    EXPECT_EQ(mine.local_rank, test::world().local_rank());
  }
  const auto lines = comm::device_lines(devices);
  ASSERT_EQ(lines.size(), devices.size());
  EXPECT_TRUE(contains(lines[0], "rank 0: host " + devices[0].host + ", local rank " + std::to_string(devices[0].local_rank)))
      << lines[0];
  if (!k_device_build) {
    EXPECT_EQ(mine.gpu, -1);
    EXPECT_EQ(binding.device, -1);
    EXPECT_EQ(comm::kokkos_device_option(binding, {}), "") << "a CPU build binds nothing";
    for (const auto& l : lines) EXPECT_TRUE(contains(l, "no GPU (CPU build)")) << l;
    if (gpu_required()) ADD_FAILURE() << "SPOTRUN_REQUIRE_GPU=1 but this build runs on the host";
    test::report("CPU build: " + lines[0]);
  } else {
    EXPECT_GE(mine.gpu, 0);
#if defined(KOKKOS_ENABLE_CUDA)
    EXPECT_EQ(mine.gpu, Kokkos::Cuda().cuda_device()) << "the GPU reported is the one Kokkos runs on";
#endif
    EXPECT_TRUE(mine.uuid.rfind("GPU-", 0) == 0 || mine.uuid.rfind("MIG-", 0) == 0) << mine.uuid;
    EXPECT_GT(mine.memory_bytes, 0u);
    EXPECT_FALSE(mine.pci_bus_id.empty());
    for (const auto& l : lines) test::report(l);
  }
}

// ---- the rules, on made-up inputs ----------------------------------------------------------------------------

TEST(DeviceRules, LocalRankFromALauncherOnlyWhenItNumbersTheNodesRanks) {
  EXPECT_EQ(comm::choose_local_rank({1, 0}, 0), 1);
  EXPECT_EQ(comm::choose_local_rank({1, 0}, 1), 0);
  EXPECT_EQ(comm::choose_local_rank({0, 0}, 1), 1) << "every rank with SLURM_LOCALID=0 (mpirun in a batch shell)";
  EXPECT_EQ(comm::choose_local_rank({-1, -1}, 1), 1) << "unset";
  EXPECT_EQ(comm::choose_local_rank({0, 2}, 1), 1) << "a gap";
  EXPECT_EQ(comm::choose_device(0, 4), 0);
  EXPECT_EQ(comm::choose_device(5, 4), 1);
  EXPECT_EQ(comm::choose_device(2, 0), -1);
}

TEST(DeviceRules, KokkosGetsTheDeviceUnlessTheUserChoseOne) {
  comm::DeviceBinding b;
  b.device = 3;
  b.device_count = 4;
  const bool env_chosen = std::getenv("KOKKOS_DEVICE_ID") || std::getenv("KOKKOS_MAP_DEVICE_ID_BY") ||
                          std::getenv("KOKKOS_NUM_DEVICES");
  if (!env_chosen) {
    EXPECT_EQ(comm::kokkos_device_option(b, {"--kokkos-num-threads=2"}), "--kokkos-device-id=3");
  }
  EXPECT_EQ(comm::kokkos_device_option(b, {"--kokkos-device-id=1"}), "");
  EXPECT_EQ(comm::kokkos_device_option(b, {"--kokkos-map-device-id-by=random"}), "");
  b.device = -1;
  EXPECT_EQ(comm::kokkos_device_option(b, {}), "");
}

TEST(DeviceRules, TwoRanksOnOneUuidShareItAndNcclIsRefused) {
  const auto r = comm::analyse_devices({gpu(0, 0, "n1", 0, k_a, "0000:41:00.0", {k_a}),
                                        gpu(1, 0, "n1", 0, k_a, "0000:41:00.0", {k_a})});
  EXPECT_TRUE(r.every_rank_has_gpu);
  ASSERT_EQ(r.shared.size(), 1u);
  EXPECT_EQ(r.shared[0], (std::vector<int>{0, 1}));
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0], "WARNING: ranks 0 and 1 share GPU 0 (UUID " + k_a + ") of node n1");
  EXPECT_TRUE(contains(r.nccl_refusal, "ranks 0 and 1 share GPU 0")) << r.nccl_refusal;
  // Three ranks: all named.
  const auto three = comm::analyse_devices({gpu(0, 0, "n1", 0, k_a, "p", {k_a}), gpu(1, 0, "n1", 0, k_a, "p", {k_a}),
                                            gpu(2, 0, "n1", 0, k_a, "p", {k_a})});
  ASSERT_EQ(three.warnings.size(), 1u);
  EXPECT_TRUE(contains(three.warnings[0], "ranks 0, 1 and 2 share GPU 0")) << three.warnings[0];
}

TEST(DeviceRules, OneGpuPerRankIsFineOnOneNodeAndOnSeveral) {
  const auto one_node = comm::analyse_devices({gpu(0, 0, "n1", 0, k_a, "0000:41:00.0", {k_a, k_b}),
                                               gpu(1, 0, "n1", 1, k_b, "0000:42:00.0", {k_a, k_b})});
  EXPECT_TRUE(one_node.shared.empty());
  EXPECT_TRUE(one_node.warnings.empty());
  EXPECT_EQ(one_node.nccl_refusal, "");
  // Slurm's per-task binding: each rank sees only its own GPU, index 0 on every rank.
  const auto per_task = comm::analyse_devices({gpu(0, 0, "n1", 0, k_a, "0000:41:00.0", {k_a}),
                                               gpu(1, 0, "n1", 0, k_b, "0000:42:00.0", {k_b})});
  EXPECT_TRUE(per_task.warnings.empty());
  EXPECT_EQ(per_task.nccl_refusal, "");
  // GPU 0 on two nodes: different GPUs.
  const auto two_nodes = comm::analyse_devices({gpu(0, 0, "n1", 0, k_a, "0000:41:00.0", {k_a}),
                                                gpu(1, 1, "n2", 0, k_b, "0000:41:00.0", {k_b})});
  EXPECT_TRUE(two_nodes.shared.empty());
  EXPECT_TRUE(two_nodes.same_physical_gpu.empty()) << "one bus ID on two nodes is two GPUs";
  EXPECT_EQ(two_nodes.nccl_refusal, "");
}

TEST(DeviceRules, MigInstancesAreDistinctGpusButNcclRefusesTwoOfOneGpu) {
  const std::string m1 = "MIG-11111111-0000-0000-0000-000000000001", m2 = "MIG-22222222-0000-0000-0000-000000000002";
  // Instances of two different GPUs: fine.
  const auto apart = comm::analyse_devices({gpu(0, 0, "n1", 0, m1, "0000:41:00.0", {m1}),
                                            gpu(1, 0, "n1", 0, m2, "0000:42:00.0", {m2})});
  EXPECT_TRUE(apart.shared.empty());
  EXPECT_TRUE(apart.warnings.empty());
  EXPECT_EQ(apart.nccl_refusal, "");
  // Two instances of one GPU (one PCI bus ID): not shared, no warning, but NCCL's "Duplicate GPU".
  const auto one_gpu = comm::analyse_devices({gpu(0, 0, "n1", 0, m1, "0000:41:00.0", {m1}),
                                              gpu(1, 0, "n1", 0, m2, "0000:41:00.0", {m2})});
  EXPECT_TRUE(one_gpu.shared.empty());
  EXPECT_TRUE(one_gpu.warnings.empty());
  ASSERT_EQ(one_gpu.same_physical_gpu.size(), 1u);
  EXPECT_TRUE(contains(one_gpu.nccl_refusal, "ranks 0 and 1 use MIG instances of one GPU (PCI 0000:41:00.0)"))
      << one_gpu.nccl_refusal;
  const auto lines = comm::device_lines({gpu(0, 0, "n1", 0, m1, "0000:41:00.0", {m1})});
  EXPECT_TRUE(contains(lines[0], "MIG instance")) << lines[0];
}

TEST(DeviceRules, AGpuWithoutARankIsWarned) {
  const auto r = comm::analyse_devices({gpu(0, 0, "n1", 0, k_a, "0000:41:00.0", {k_a, k_b}),
                                        gpu(1, 1, "n2", 0, "GPU-cccccccc-0000-0000-0000-000000000003", "0000:41:00.0",
                                            {"GPU-cccccccc-0000-0000-0000-000000000003"})});
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0], "WARNING: GPU 1 of node n1 has no rank (UUID " + k_b + ")");
  EXPECT_EQ(r.nccl_refusal, "") << "an idle GPU does not stop NCCL";
}

TEST(DeviceRules, ARankWithoutGpuRefusesNccl) {
  comm::DeviceInfo cpu;
  cpu.rank = 1;
  cpu.host = "n1";
  cpu.none_reason = "CPU build";
  const auto r = comm::analyse_devices({gpu(0, 0, "n1", 0, k_a, "p", {k_a}), cpu});
  EXPECT_FALSE(r.every_rank_has_gpu);
  EXPECT_TRUE(contains(r.nccl_refusal, "rank 1 has no GPU (CPU build)")) << r.nccl_refusal;
  EXPECT_TRUE(contains(comm::device_lines({cpu})[0], "no GPU (CPU build)"));
}

TEST(DeviceRules, DeviceInfoSurvivesTheGatherEncoding) {
  auto d = gpu(2, 1, "node-7.cluster", 1, k_b, "0000:42:00.0", {k_a, k_b});
  d.cpu_binding = "CPUs 8-15 (bound near GPU 1: share 2 of 2 of CPUs 0-15)";
  const auto back = comm::decode_device_info(comm::encode_device_info(d));
  EXPECT_EQ(comm::encode_device_info(back), comm::encode_device_info(d));
  EXPECT_EQ(back.visible, d.visible);
  EXPECT_EQ(back.cpu_binding, d.cpu_binding);
  EXPECT_TRUE(contains(comm::device_lines({d})[0], "; CPUs 8-15 (bound near GPU 1")) << comm::device_lines({d})[0];
  EXPECT_EQ(back.memory_bytes, d.memory_bytes);
  EXPECT_THROW(comm::decode_device_info("rank 0, host n1"), std::runtime_error);
}

// ---- CPU cores near the GPU (comm/cpu_binding.hpp) ------------------------------------------------------------

TEST(CpuBinding, RanksNearOneGpuSplitItsCoresInBlocks) {
  // 8 cores of 2 hardware threads (OS numbering as on x86: thread 2 of core k is k + 8).
  std::vector<std::vector<int>> cores;
  for (int k = 0; k < 8; ++k) cores.push_back({k, k + 8});
  EXPECT_EQ(comm::share_of_cores(cores, 0, 1), (std::vector<int>{0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15}));
  EXPECT_EQ(comm::share_of_cores(cores, 0, 2), (std::vector<int>{0, 8, 1, 9, 2, 10, 3, 11}));
  EXPECT_EQ(comm::share_of_cores(cores, 1, 2), (std::vector<int>{4, 12, 5, 13, 6, 14, 7, 15}));
  // 3 ranks on 8 cores: blocks of 2, 3 and 3 whole cores, every core once.
  std::vector<int> all;
  std::vector<std::size_t> sizes;
  for (int i = 0; i < 3; ++i) {
    const auto share = comm::share_of_cores(cores, i, 3);
    sizes.push_back(share.size() / 2);
    all.insert(all.end(), share.begin(), share.end());
  }
  EXPECT_EQ(sizes, (std::vector<std::size_t>{2, 3, 3}));
  std::sort(all.begin(), all.end());
  for (int k = 0; k < 16; ++k) EXPECT_EQ(all[static_cast<std::size_t>(k)], k);
}

TEST(CpuBinding, FewerCoresThanRanksSplitTheThreadsThenShareThem) {
  const std::vector<std::vector<int>> two_cores{{0, 2}, {1, 3}};
  // 4 ranks, 2 cores of 2 threads: a thread each.
  EXPECT_EQ(comm::share_of_cores(two_cores, 0, 4), (std::vector<int>{0}));
  EXPECT_EQ(comm::share_of_cores(two_cores, 3, 4), (std::vector<int>{3}));
  // 3 ranks: threads in blocks of 1, 1 and 2.
  EXPECT_EQ(comm::share_of_cores(two_cores, 2, 3), (std::vector<int>{1, 3}));
  // More ranks than threads: every rank gets all of them.
  EXPECT_EQ(comm::share_of_cores({{5}}, 1, 2), (std::vector<int>{5}));
  // Nothing to share, or a rank outside the group.
  EXPECT_TRUE(comm::share_of_cores({}, 0, 1).empty());
  EXPECT_TRUE(comm::share_of_cores(two_cores, 2, 2).empty());
  EXPECT_TRUE(comm::share_of_cores(two_cores, -1, 2).empty());
}

TEST(CpuBinding, TheModeIsAutoGpuOrNoneAndABadOneIsNamed) {
  EXPECT_EQ(comm::cpu_bind_mode(nullptr), comm::CpuBindMode::automatic);
  EXPECT_EQ(comm::cpu_bind_mode(""), comm::CpuBindMode::automatic);
  EXPECT_EQ(comm::cpu_bind_mode("auto"), comm::CpuBindMode::automatic);
  EXPECT_EQ(comm::cpu_bind_mode("gpu"), comm::CpuBindMode::gpu);
  EXPECT_EQ(comm::cpu_bind_mode("none"), comm::CpuBindMode::none);
  try {
    comm::cpu_bind_mode("cores");
    ADD_FAILURE() << "no error for SPOTRUN_CPU_BIND=cores";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "SPOTRUN_CPU_BIND=\"cores\": expected auto, gpu or none")) << e.what();
  }
}

// ---- the transport choice ------------------------------------------------------------------------------------

TEST(TransportChoice, AutoTakesNcclWithAGpuPerRankElseSaysWhyNot) {
  const comm::DeviceReport own = comm::analyse_devices({gpu(0, 0, "n1", 0, k_a, "0000:41:00.0", {k_a, k_b}),
                                                        gpu(1, 0, "n1", 1, k_b, "0000:42:00.0", {k_a, k_b})});
  const comm::DeviceReport shared = comm::analyse_devices({gpu(0, 0, "n1", 0, k_a, "0000:41:00.0", {k_a}),
                                                           gpu(1, 0, "n1", 0, k_a, "0000:41:00.0", {k_a})});
  const comm::TransportBuild cuda_nccl{true, true, false}, cuda_nccl_aware{true, true, true}, cuda_only{true, false, false},
      host_nccl{false, true, false};
  EXPECT_EQ(comm::choose_transport("auto", 2, cuda_nccl, &own).kind, "nccl");
  const auto fallback = comm::choose_transport("auto", 2, cuda_nccl, &shared);
  EXPECT_EQ(fallback.kind, "mpi-host");
  EXPECT_TRUE(contains(fallback.why, "ranks 0 and 1 share GPU 0")) << fallback.why;
  EXPECT_TRUE(contains(fallback.why, "NCCL refuses")) << fallback.why;
  EXPECT_EQ(comm::choose_transport("auto", 2, cuda_nccl_aware, &shared).kind, "mpi");
  const auto without = comm::choose_transport("auto", 2, cuda_only, &own);
  EXPECT_EQ(without.kind, "mpi-host");
  EXPECT_TRUE(contains(without.why, "NCCL is not compiled in")) << without.why;
  EXPECT_EQ(comm::choose_transport("auto", 2, host_nccl, nullptr).kind, "mpi");
}

TEST(TransportChoice, AutoAtOneRankCopiesLocallyAndStartsNoNccl) {
  const comm::DeviceReport one = comm::analyse_devices({gpu(0, 0, "n1", 0, k_a, "0000:41:00.0", {k_a})});
  ASSERT_EQ(one.nccl_refusal, "") << "one rank on its own GPU: NCCL would take it";
  const comm::TransportBuild cuda_nccl{true, true, false}, cuda_nccl_aware{true, true, true}, host{false, true, false};
  const auto single = comm::choose_transport("auto", 1, cuda_nccl, &one);
  EXPECT_EQ(single.kind, "mpi-host");
  EXPECT_TRUE(contains(single.why, "one rank: every halo is a local copy, NCCL is not started")) << single.why;
  // The devices are not needed at one rank (make_transport does not gather them).
  EXPECT_EQ(comm::choose_transport("auto", 1, cuda_nccl_aware, nullptr).kind, "mpi");
  const auto host_single = comm::choose_transport("auto", 1, host, nullptr);
  EXPECT_EQ(host_single.kind, "mpi");
  EXPECT_TRUE(contains(host_single.why, "one rank")) << host_single.why;
  EXPECT_TRUE(contains(comm::choose_transport("auto", 2, host, nullptr).why, "host build")) << "two ranks";
  // Asked for explicitly, NCCL still runs at one rank (tools/gpu-check.sh routes self-messages through it).
  EXPECT_EQ(comm::choose_transport("nccl", 1, cuda_nccl, &one).kind, "nccl");
}

TEST(TransportChoice, WithoutTheNcclLibraryAutoTakesMpiAndNcclIsRefused) {
  const comm::DeviceReport own = comm::analyse_devices({gpu(0, 0, "n1", 0, k_a, "0000:41:00.0", {k_a, k_b}),
                                                        gpu(1, 0, "n1", 1, k_b, "0000:42:00.0", {k_a, k_b})});
  const std::string missing = "rank 1: the NCCL library libnccl.so.2 cannot be loaded (libnccl.so.2: cannot open "
                              "shared object file: No such file or directory)";
  const comm::TransportBuild cuda{true, true, false, missing}, cuda_aware{true, true, true, missing},
      host{false, true, false, missing};
  const auto fallback = comm::choose_transport("auto", 2, cuda, &own);
  EXPECT_EQ(fallback.kind, "mpi-host");
  EXPECT_TRUE(contains(fallback.why, missing)) << fallback.why;
  EXPECT_EQ(comm::choose_transport("auto", 2, cuda_aware, &own).kind, "mpi");
  for (const auto& build : {cuda, host}) {
    try {
      comm::choose_transport("nccl", 2, build, &own);
      ADD_FAILURE() << "comm.transport = \"nccl\" accepted without the NCCL library";
    } catch (const InputError& e) {
      EXPECT_TRUE(contains(e.what(), "libnccl.so.2 cannot be loaded")) << e.what();
      EXPECT_TRUE(contains(e.what(), "LD_LIBRARY_PATH")) << e.what();
      EXPECT_EQ(e.exit_code(), k_exit_bad_input);
    }
  }
}

// A transport that counts its aborts (a stand-in for NCCL's).
class AbortCounter final : public comm::Transport {
 public:
  std::string name() const override { return "counter"; }
  std::string description() const override { return "counts aborts"; }
  comm::Accepts accepts() const override { return comm::Accepts::either; }
  void exchange(const comm::Batch&, void*) override {}
  void abort() noexcept override { ++aborts; }
  int aborts = 0;
};

TEST(TransportAbort, AnErrorAbortsTheTransportBeforeTheSolverIsFreed) {
  AbortCounter t;
  { const comm::AbortOnUnwind guard(t); }
  EXPECT_EQ(t.aborts, 0) << "a normal end does not abort";
  // As in run(): the solver's owner, then the guard; the guard's destructor runs first on unwinding.
  struct Solver {
    AbortCounter& t;
    int* aborts_when_freed;
    ~Solver() { *aborts_when_freed = t.aborts; }
  };
  int aborts_when_freed = -1;
  try {
    Solver solver{t, &aborts_when_freed};
    const comm::AbortOnUnwind guard(t);
    throw std::runtime_error("a step failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(t.aborts, 1);
  EXPECT_EQ(aborts_when_freed, 1) << "the solver was freed before the transport was aborted";
  // The wrappers pass it on to the transport they wrap.
  auto inner = std::make_unique<AbortCounter>();
  AbortCounter* raw = inner.get();
  comm::StagedTransport staged(std::move(inner), false);
  staged.abort();
  EXPECT_EQ(raw->aborts, 1);
}

TEST(NcclLibrary, AMissingLibraryIsNamed) {
  const comm::NcclLibrary none = comm::probe_nccl_library("libnccl-spotrun-absent.so.2");
  EXPECT_FALSE(none.loaded);
  if (comm::impl::nccl_compiled()) {
    EXPECT_TRUE(contains(none.error, "the NCCL library libnccl-spotrun-absent.so.2 cannot be loaded")) << none.error;
  } else {
    EXPECT_EQ(none.error, "NCCL is not compiled in");
  }
  // The real one, where this machine has it: loaded with every function, its version read through them.
  const comm::NcclLibrary real = comm::probe_nccl_library(comm::k_nccl_library);
  if (real.loaded) {
    EXPECT_TRUE(comm::impl::nccl_compiled());
    EXPECT_EQ(real.version.rfind("2.", 0), 0u) << real.version;
    EXPECT_EQ(comm::nccl_library().version, real.version);
  }
  if (test::rank() == 0)
    test::report(std::string(comm::k_nccl_library) + ": " + (real.loaded ? "loaded, NCCL " + real.version : real.error));
}

TEST(TransportChoice, ExplicitNcclIsRefusedWithItsReason) {
  const comm::DeviceReport shared = comm::analyse_devices({gpu(0, 0, "n1", 0, k_a, "0000:41:00.0", {k_a}),
                                                           gpu(1, 0, "n1", 0, k_a, "0000:41:00.0", {k_a})});
  auto message = [](const std::string& kind, const comm::TransportBuild& b, const comm::DeviceReport* d) {
    try {
      comm::choose_transport(kind, 2, b, d);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no InputError)");
  };
  EXPECT_TRUE(contains(message("nccl", {true, true, false}, &shared), "ranks 0 and 1 share GPU 0"));
  EXPECT_TRUE(contains(message("nccl", {false, true, false}, nullptr), "needs a CUDA build"));
  EXPECT_TRUE(contains(message("nccl", {false, false, false}, nullptr), "not compiled in"));
  EXPECT_TRUE(contains(message("nccl", {true, false, false}, &shared), "not compiled in"));
  EXPECT_TRUE(contains(message("carrier-pigeon", {false, false, false}, nullptr), "\"nccl\""));
  EXPECT_EQ(comm::choose_transport("mpi-host", 2, {true, true, false}, &shared).kind, "mpi-host");
}

// ---- the transports on this build ----------------------------------------------------------------------------

// Every rank sends every rank (itself included) a message of its own length and content from device
// buffers (the default memory space; host memory on a CPU build) through comm::exchange, as movers do;
// the receiver checks each byte after a fence of the transport.
void check_device_all_to_all(comm::Transport& t) {
  using Space = Kokkos::DefaultExecutionSpace;
  using Bytes = Kokkos::View<unsigned char*, Space::memory_space>;
  const int me = test::rank(), n = test::nranks();
  auto length = [](int from, int to) { return static_cast<std::size_t>(97 * from + 13 * to + 5 + (from == to ? 0 : 3000)); };
  auto byte = [](int from, int to, std::size_t k) { return static_cast<unsigned char>((from * 31 + to * 7 + k) % 251); };
  std::vector<Bytes> out(n), in(n);
  comm::Batch batch;
  batch.memory = comm::memory_of<Space::memory_space>();
  for (int r = 0; r < n; ++r) {
    out[r] = Bytes("out", length(me, r));
    in[r] = Bytes("in", length(r, me));
    auto h = Kokkos::create_mirror_view(out[r]);
    for (std::size_t k = 0; k < h.extent(0); ++k) h(k) = byte(me, r, k);
    Kokkos::deep_copy(out[r], h);
    if (r == me && !t.route_self()) {
      Kokkos::deep_copy(in[r], out[r]);
      continue;
    }
    batch.send(r, out[r].data(), out[r].extent(0));
    batch.recv(r, in[r].data(), in[r].extent(0));
  }
  comm::exchange(t, batch, Space());
  t.fence();
  Kokkos::fence();
  std::size_t wrong = 0;
  for (int r = 0; r < n; ++r) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), in[r]);
    for (std::size_t k = 0; k < h.extent(0); ++k) wrong += h(k) != byte(r, me, k);
  }
  EXPECT_EQ(wrong, 0u) << t.name();
}

TEST(TransportNccl, AutoMovesADeviceBatch) {
  auto t = comm::make_transport("auto", test::world());
  check_device_all_to_all(*t);
  test::report("auto: " + t->name() + " (" + t->description() + ")");
}

TEST(TransportNccl, MovesEveryMessageOfADeviceBatchWithAGpuPerRank) {
  if (!k_device_build) {
    std::string message;
    try {
      comm::make_transport("nccl", test::world());
    } catch (const InputError& e) {
      message = e.what();
    }
    EXPECT_TRUE(contains(message, comm::impl::nccl_compiled() ? "needs a CUDA build" : "not compiled in")) << message;
    if (gpu_required()) ADD_FAILURE() << "SPOTRUN_REQUIRE_GPU=1 but this build runs on the host";
    test::report(std::string("NCCL transport ") + (comm::impl::nccl_compiled() ? "compiled in" : "not compiled in") +
                 "; host build: not run");
    return;  // the same branch on every rank
  }
  const auto report = comm::analyse_devices(comm::gather_devices(test::world()));
  if (!comm::impl::nccl_compiled() || !report.nccl_refusal.empty()) {
    EXPECT_THROW(comm::make_transport("nccl", test::world()), InputError);
    if (gpu_required() && !comm::impl::nccl_compiled()) ADD_FAILURE() << "SPOTRUN_REQUIRE_GPU=1 but NCCL is not compiled in";
    test::report("NCCL transport not run: " + (comm::impl::nccl_compiled() ? report.nccl_refusal : "not compiled in"));
    return;
  }
  for (const bool route_self : {false, true}) {
    comm::TransportOptions o;
    o.kind = "nccl";
    o.route_self = route_self;
    o.nccl_timeout_s = 60;
    auto t = comm::make_transport(o, test::world());
    EXPECT_EQ(t->name(), "nccl");
    EXPECT_TRUE(t->stream_ordered());
    EXPECT_EQ(t->route_self(), route_self);
    check_device_all_to_all(*t);
    check_device_all_to_all(*t);  // the same transport again: events and buffers reused
    test::report("nccl (" + t->description() + "), route_self " + (route_self ? "on" : "off") + ": all-to-all correct");
  }
}

}  // namespace

// The one loader of libraries at run time (comm/shared_library.hpp): typed lookups, every missing function
// named, an error naming the library and the function, and the loader's reason when it cannot load.
TEST(SharedLibrary, LooksUpAndNamesWhatIsMissing) {
  using spotrun::comm::SharedLibrary;
  SharedLibrary m = SharedLibrary::open("libm.so.6");
  ASSERT_TRUE(m.loaded()) << m.error();
  const auto cosine = m.find<double (*)(double)>("cos");
  ASSERT_NE(cosine, nullptr);
  EXPECT_DOUBLE_EQ(cosine(0.0), 1.0);
  std::string missing;
  double (*fn)(double) = nullptr;
  EXPECT_TRUE(m.look_up(fn, "sin", missing));
  EXPECT_FALSE(m.look_up(fn, "spotrun_no_such_a", missing));
  EXPECT_FALSE(m.look_up(fn, "spotrun_no_such_b", missing));
  EXPECT_EQ(missing, "spotrun_no_such_a, spotrun_no_such_b");
  try {
    m.symbol<double (*)(double)>("spotrun_no_such_c");
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "libm.so.6 has no function spotrun_no_such_c");
  }
  SharedLibrary moved = std::move(m);
  EXPECT_FALSE(m.loaded());
  EXPECT_TRUE(moved.loaded());
  const SharedLibrary none = SharedLibrary::open("libspotrun-no-such-library.so.9");
  EXPECT_FALSE(none.loaded());
  EXPECT_NE(none.error().find("libspotrun-no-such-library.so.9"), std::string::npos) << none.error();
}
