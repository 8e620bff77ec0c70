// A transport added by registration alone (comm/transport_registry.hpp, docs/layout.md): "loopback" moves
// the messages a rank sends itself, by a copy on the host, and refuses a run of more than one rank. This
// file and its name in test_comm's sources are all it takes. The oracles: at one rank an MD run whose every
// halo message goes through it (route_self) is bit for bit the run through MPI, and an all-to-all batch
// arrives byte for byte; at more ranks make_transport() refuses it on every rank with the registration's
// message; comm.transport's choices list it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "comm/errors.hpp"
#include "comm/transport_registry.hpp"
#include "solvers/md/md_solver.hpp"
#include "support/md_helpers.hpp"
#include "support/mpi_test.hpp"

using namespace spotrun;

namespace {

class LoopbackTransport final : public comm::Transport {
 public:
  explicit LoopbackTransport(bool route_self) : m_route_self(route_self) {}
  std::string name() const override { return "loopback"; }
  std::string description() const override { return with_choice("loopback (a test transport: host copies to this rank)"); }
  comm::Accepts accepts() const override { return comm::Accepts::host; }
  bool route_self() const override { return m_route_self; }
  void exchange(const comm::Batch& batch, void*) override {
    if (batch.memory != comm::Memory::host) throw std::runtime_error("loopback: device buffers");
    if (batch.sends.size() != batch.recvs.size()) throw std::runtime_error("loopback: sends and receives differ in number");
    // The k-th send to this rank matches the k-th receive from it (Batch's contract).
    for (std::size_t k = 0; k < batch.sends.size(); ++k) {
      const auto &s = batch.sends[k], &r = batch.recvs[k];
      if (s.peer != 0 || r.peer != 0 || s.bytes != r.bytes) throw std::runtime_error("loopback: a message to another rank");
      if (s.bytes) std::memmove(r.data, s.data, s.bytes);
    }
    ++exchanges;
  }
  static inline int exchanges = 0;

 private:
  bool m_route_self;
};

const bool registered = comm::register_transport(
    {"loopback",
     [](const comm::TransportBuild&, int ranks, const comm::DeviceReport*) -> std::string {
       if (ranks == 1) return "";
       return "comm.transport = \"loopback\" runs at one rank only (" + std::to_string(ranks) +
              " here): use \"auto\", \"mpi\" or \"mpi-host\"";
     },
     [](const comm::Communicator&, const comm::TransportOptions& o, const std::vector<comm::DeviceInfo>&) {
       return std::unique_ptr<comm::Transport>(std::make_unique<LoopbackTransport>(o.route_self));
     }});

comm::TransportOptions loopback_options(const std::string& kind) {
  comm::TransportOptions o;
  o.kind = kind;
  o.route_self = true;
  return o;
}

}  // namespace

TEST(LoopbackTransport, ARegisteredTransportIsAKindOfCommTransport) {
  ASSERT_TRUE(registered);
  const auto& kinds = comm::transport_kinds();
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), "loopback"), kinds.end());
  EXPECT_NE(comm::find_transport("loopback"), nullptr);
  EXPECT_THROW(comm::register_transport({"loopback", {}, {}}), std::logic_error);
  EXPECT_THROW(comm::register_transport({"auto", {}, {}}), std::logic_error);
  // "auto" never picks a registered transport.
  EXPECT_NE(comm::choose_transport("auto", 1, comm::TransportBuild{}, nullptr).kind, "loopback");
}

TEST(LoopbackTransport, OneRankRunsThroughItBitForBitOtherRankCountsAreRefused) {
  if (test::nranks() > 1) {
    try {
      comm::make_transport(loopback_options("loopback"), test::world());
      ADD_FAILURE() << "loopback was made at " << test::nranks() << " ranks";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("comm.transport = \"loopback\" runs at one rank only"), std::string::npos)
          << e.what();
    }
    return;
  }
  auto t = comm::make_transport(loopback_options("loopback"), test::world());
  EXPECT_EQ(t->name(), "loopback");
  // A batch of messages to itself, byte for byte.
  std::vector<unsigned char> a(1000), b(17), ra(1000), rb(17);
  for (std::size_t k = 0; k < a.size(); ++k) a[k] = static_cast<unsigned char>(k * 7 % 251);
  for (std::size_t k = 0; k < b.size(); ++k) b[k] = static_cast<unsigned char>(k + 100);
  comm::Batch batch;
  batch.send(0, a.data(), a.size());
  batch.send(0, b.data(), b.size());
  batch.recv(0, ra.data(), ra.size());
  batch.recv(0, rb.data(), rb.size());
  t->exchange(batch);
  EXPECT_EQ(ra, a);
  EXPECT_EQ(rb, b);

  // An MD run whose halo messages all go through the loopback: the same thermo as through MPI.
  auto run = [](const comm::TransportOptions& o) {
    auto cfg = test::lattice_config({6, 5, 7}, 2.0);
    auto tr = comm::make_transport(o, test::world());
    md::MdSolver s(cfg, test::world(), *tr, nullptr);
    return test::run_thermo(s, 60, 20);
  };
  const int before = LoopbackTransport::exchanges;
  const auto through_loopback = run(loopback_options("loopback"));
  EXPECT_GT(LoopbackTransport::exchanges, before + 10) << "the halo did not go through the loopback";
  const auto through_mpi = run(loopback_options("auto"));  // the build's MPI transport
  ASSERT_EQ(through_loopback.size(), through_mpi.size());
  for (std::size_t r = 0; r < through_mpi.size(); ++r)
    for (int c = 0; c < 7; ++c) EXPECT_EQ(through_loopback[r][c], through_mpi[r][c]) << "row " << r << " column " << c;
}
