#include "reshape_plan.hpp"

#include <stdexcept>
#include <string>

namespace spotrun::fft {
namespace {

void check_tiling(const std::vector<Layout3>& layouts, const char* which) {
  for (std::size_t a = 0; a < layouts.size(); ++a)
    for (std::size_t b = a + 1; b < layouts.size(); ++b)
      if (!collide(layouts[a].box, layouts[b].box).empty())
        throw std::invalid_argument(std::string("make_reshape_plan: ") + which + " boxes of ranks " +
                                    std::to_string(a) + " and " + std::to_string(b) + " overlap");
}

// Whether `array` can hold the data of `data` (its box contains the data box, the same storage order).
void check_array(const Layout3& data, const Layout3& array, const char* which) {
  if (array.box.empty() || data.box.empty()) return;
  bool inside = true;
  for (int d = 0; d < 3; ++d) inside = inside && array.box.lo[d] <= data.box.lo[d] && data.box.hi[d] <= array.box.hi[d];
  if (!inside) throw std::invalid_argument(std::string("within_arrays: the ") + which + " array does not contain its data box");
  if (array.order != data.order)
    throw std::invalid_argument(std::string("within_arrays: the ") + which + " array has another storage order");
}

}  // namespace

ReshapePlan make_reshape_plan(const std::vector<Layout3>& in, const std::vector<Layout3>& out, int rank) {
  if (in.size() != out.size() || in.empty())
    throw std::invalid_argument("make_reshape_plan: in and out must list the same number of ranks");
  if (rank < 0 || rank >= static_cast<int>(in.size())) throw std::invalid_argument("make_reshape_plan: bad rank");
  check_tiling(in, "input");
  check_tiling(out, "output");
  std::size_t total_in = 0, total_out = 0;
  for (std::size_t r = 0; r < in.size(); ++r) {
    total_in += in[r].count();
    total_out += out[r].count();
    if (!out[r].box.empty() && out[r].order != out[0].order && !out[0].box.empty())
      throw std::invalid_argument("make_reshape_plan: output layouts must share one storage order");
  }
  if (total_in != total_out)
    throw std::invalid_argument("make_reshape_plan: input and output boxes hold different numbers of elements");

  ReshapePlan p;
  p.rank = rank;
  p.nranks = static_cast<int>(in.size());
  p.in = in[rank];
  p.out = out[rank];
  std::size_t covered_in = 0, covered_out = 0;
  for (int q = 0; q < p.nranks; ++q) {
    const Box3i s = collide(in[rank].box, out[q].box);
    const Box3i r = collide(in[q].box, out[rank].box);
    covered_in += s.empty() ? 0 : s.count();
    covered_out += r.empty() ? 0 : r.count();
    if (q == rank) {
      p.self = s;
      continue;
    }
    if (!s.empty()) {
      p.sends.push_back({q, s, p.send_total});
      p.send_total += s.count();
    }
    if (!r.empty()) {
      p.recvs.push_back({q, r, p.recv_total});
      p.recv_total += r.count();
    }
  }
  if (covered_in != in[rank].count() || covered_out != out[rank].count())
    throw std::invalid_argument("make_reshape_plan: the input and output boxes do not cover the same indices on rank " +
                                std::to_string(rank));
  return p;
}

ReshapePlan clipped(ReshapePlan plan, const Box3i& keep) {
  auto clip = [&](std::vector<ReshapePlan::Block>& blocks, std::size_t& total) {
    std::vector<ReshapePlan::Block> kept;
    total = 0;
    for (const auto& b : blocks) {
      const Box3i c = collide(b.box, keep);
      if (c.empty()) continue;
      kept.push_back({b.rank, c, total});
      total += c.count();
    }
    blocks = std::move(kept);
  };
  clip(plan.sends, plan.send_total);
  clip(plan.recvs, plan.recv_total);
  if (!plan.self.empty()) plan.self = collide(plan.self, keep);
  return plan;
}

ReshapePlan within_arrays(ReshapePlan plan, const Layout3& in_array, const Layout3& out_array) {
  check_array(plan.in, in_array, "input");
  check_array(plan.out, out_array, "output");
  if (!in_array.box.empty()) plan.in_array = in_array;
  if (!out_array.box.empty()) plan.out_array = out_array;
  return plan;
}

Layout3 x_block_layout(const std::array<int, 3>& n, int nranks, int r) {
  const auto xs = split_bounds(n[0], nranks, r);
  Layout3 l;
  l.box = {{xs[0], 0, 0}, {xs[1], n[1] - 1, n[2] - 1}};
  l.order = {0, 1, 2};
  return l;
}

std::vector<Layout3> x_block_layouts(const std::array<int, 3>& n, int nranks) {
  std::vector<Layout3> out;
  for (int r = 0; r < nranks; ++r) out.push_back(x_block_layout(n, nranks, r));
  return out;
}

}  // namespace spotrun::fft
