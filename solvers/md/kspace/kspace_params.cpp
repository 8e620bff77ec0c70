#include "kspace_params.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "comm/errors.hpp"
#include "comm/number_text.hpp"
#include "tally.hpp"

namespace spotrun::md::kspace {

namespace {

// Deserno and Holm's coefficients a_m(p) of the ik error of charge assignment order p (their Table I;
// m = 0 .. p - 1), as LAMMPS tabulates them.
const double k_error_coefficients[k_max_order + 1][k_max_order] = {
    {0, 0, 0, 0, 0, 0, 0},
    {2.0 / 3.0, 0, 0, 0, 0, 0, 0},
    {1.0 / 50.0, 5.0 / 294.0, 0, 0, 0, 0, 0},
    {1.0 / 588.0, 7.0 / 1440.0, 21.0 / 3872.0, 0, 0, 0, 0},
    {1.0 / 4320.0, 3.0 / 1936.0, 7601.0 / 2271360.0, 143.0 / 28800.0, 0, 0, 0},
    {1.0 / 23232.0, 7601.0 / 13628160.0, 143.0 / 69120.0, 517231.0 / 106536960.0, 106640677.0 / 11737571328.0, 0, 0},
    {691.0 / 68140800.0, 13.0 / 57600.0, 47021.0 / 35512320.0, 9694607.0 / 2095994880.0,
     733191589.0 / 59609088000.0, 326190917.0 / 11700633600.0, 0},
    {1.0 / 345600.0, 3617.0 / 35512320.0, 745739.0 / 838397952.0, 56399353.0 / 12773376000.0,
     25091609.0 / 1560084480.0, 1755948832039.0 / 36229939200000.0, 4887769399.0 / 37838389248.0},
};

std::string mesh_text(const std::array<int, 3>& n) {
  return std::to_string(n[0]) + " x " + std::to_string(n[1]) + " x " + std::to_string(n[2]);
}

std::string bytes_text(double bytes) {
  if (bytes >= 1024.0 * 1024.0 * 1024.0) return significant(bytes / (1024.0 * 1024.0 * 1024.0), 3) + " GiB";
  return significant(bytes / (1024.0 * 1024.0), 3) + " MiB";
}

// The checks choose_pppm and choose_ewald share.
void check_common(const KspaceOptions& o, const ChargeTotals& c) {
  if (!(std::isfinite(o.accuracy) && o.accuracy > 0))
    throw InputError("md.kspace.accuracy = " + significant(o.accuracy, 6) + ": must be > 0 (a relative RMS force error)");
  if (!(std::isfinite(o.cutoff) && o.cutoff > 0))
    throw InputError("md.kspace: the real-space Coulomb cutoff is " + significant(o.cutoff, 6) +
                     "; a k-space solver needs a pair style with a cutoff > 0");
  if (!(std::isfinite(o.g_ewald) && o.g_ewald >= 0))
    throw InputError("md.kspace.g_ewald = " + significant(o.g_ewald, 6) + ": must be > 0 (or 0: chosen)");
  if (o.g_ewald == 0 && c.sum_sq == 0)
    throw InputError("md.kspace.g_ewald: the system has no charges, so the accuracy cannot choose g_ewald; give "
                     "md.kspace.g_ewald");
  if (!(std::isfinite(o.qqrd2e) && o.qqrd2e > 0) || !(std::isfinite(o.two_charge_force) && o.two_charge_force > 0))
    throw InputError("md.kspace: the Coulomb constant and the two-charge force must be > 0");
}

}  // namespace

ChargeTotals charge_totals(const DoubleView& q, int nlocal, const comm::Communicator& comm) {
  double sum = 0, sum_sq = 0;
  auto qv = q;
  Kokkos::parallel_reduce(
      "md::kspace::charge_sum", Policy(0, nlocal), KOKKOS_LAMBDA(const int i, double& s) { s += qv(i); }, sum);
  Kokkos::parallel_reduce(
      "md::kspace::charge_sum_sq", Policy(0, nlocal), KOKKOS_LAMBDA(const int i, double& s) { s += qv(i) * qv(i); },
      sum_sq);
  double v[2] = {sum, sum_sq};
  comm.sum_in_place(v, 2);
  ChargeTotals t;
  t.count = comm.sum(static_cast<std::int64_t>(nlocal));
  t.sum = v[0];
  t.sum_sq = v[1];
  return t;
}

namespace impl {

// sum q and sum q^2 of the owned atoms.
void owned_charge_sums(const DoubleView& q, int nlocal, double& sum, double& sum_sq) {
  sum = 0;
  sum_sq = 0;
  Kokkos::parallel_reduce(
      "md::kspace::owned_charge", Policy(0, nlocal), KOKKOS_LAMBDA(const int i, double& s) { s += q(i); }, sum);
  Kokkos::parallel_reduce(
      "md::kspace::owned_charge_sq", Policy(0, nlocal), KOKKOS_LAMBDA(const int i, double& s) { s += q(i) * q(i); },
      sum_sq);
}

// The self energy and the background's energy of the owned charges, added to r (and the background's virial).
void add_self_and_background(KspaceResult& r, double sum, double sum_sq, double net_charge, double g, double volume,
                             double qqrd2e) {
  const double self = -qqrd2e * g / std::sqrt(k_pi) * sum_sq;
  const double background = -qqrd2e * k_pi * net_charge * sum / (2.0 * g * g * volume);
  r.energy += self + background;
  for (int d = 0; d < 3; ++d) r.virial[d] += background;
}

}  // namespace impl

double real_space_error(double g_ewald, double cutoff, double q2, double natoms, double volume) {
  return 2.0 * q2 * std::exp(-g_ewald * g_ewald * cutoff * cutoff) / std::sqrt(natoms * cutoff * volume);
}

double initial_g_ewald(double accuracy, double cutoff, double q2, double natoms, double volume) {
  const double x = accuracy * std::sqrt(natoms * cutoff * volume) / (2.0 * q2);
  if (x >= 1.0) return (1.35 - 0.15 * std::log(accuracy)) / cutoff;
  return std::sqrt(-std::log(x)) / cutoff;
}

double ik_error(double h, double length, double g_ewald, int order, double q2, double natoms) {
  if (natoms <= 0) return 0;
  const double hg = h * g_ewald;
  double sum = 0;
  for (int m = 0; m < order; ++m) sum += k_error_coefficients[order][m] * std::pow(hg, 2.0 * m);
  return q2 * std::pow(hg, static_cast<double>(order)) *
         std::sqrt(g_ewald * length * std::sqrt(2.0 * k_pi) * sum / natoms) / (length * length);
}

double pppm_kspace_error(const std::array<int, 3>& mesh, const comm::Box3& box, double g_ewald, int order, double q2,
                         double natoms) {
  double s = 0;
  for (int d = 0; d < 3; ++d) {
    const double L = box.length(d);
    const double e = ik_error(L / mesh[d], L, g_ewald, order, q2, natoms);
    s += e * e;
  }
  return std::sqrt(s / 3.0);
}

double ewald_side_error(int kmax, double length, double g_ewald, double q2, double natoms) {
  if (natoms <= 0) natoms = 1;
  return 2.0 * q2 * g_ewald / length * std::sqrt(1.0 / (k_pi * kmax * natoms)) *
         std::exp(-k_pi * k_pi * kmax * kmax / (g_ewald * g_ewald * length * length));
}

bool factorable(int n) {
  if (n < 1) return false;
  for (int f : {2, 3, 5})
    while (n % f == 0) n /= f;
  return n == 1;
}

// sum_m sinc^(2p)(z + pi m) = sin^(2p)(z) S_2p(z), S_n(z) = sum_m (z + pi m)^-n, S_2 = 1 / sin^2(z), and
// S_(n+1) = -S_n' / n. Written S_2p = P_p(x) / sin^(2p)(z) with x = sin^2(z), two derivatives give
//   P_(p+1) = [-x Q + 2 x (1 - x) Q' - (2p + 1)(1 - x) Q] / (2p (2p + 1)),  Q = 2 x P_p' - 2p P_p,
// from P_1 = 1 (P_2 = 1 - 2x/3, P_3 = 1 - x + 2x^2/15, ...).
std::vector<double> alias_sum_coefficients(int order) {
  std::vector<double> p{1.0};
  for (int k = 1; k < order; ++k) {
    const std::size_t n = p.size();  // degree n - 1
    std::vector<double> q(n, 0.0);
    for (std::size_t l = 0; l < n; ++l) q[l] = 2.0 * static_cast<double>(l) * p[l] - 2.0 * k * p[l];
    std::vector<double> dq(n, 0.0);  // Q' (degree n - 2), stored by power
    for (std::size_t l = 1; l < n; ++l) dq[l - 1] = static_cast<double>(l) * q[l];
    std::vector<double> r(n + 1, 0.0);
    for (std::size_t l = 0; l < n; ++l) {
      r[l] -= (2.0 * k + 1.0) * q[l];            // -(2k + 1) Q
      r[l + 1] += 2.0 * k * q[l];                // -x Q + (2k + 1) x Q
    }
    for (std::size_t l = 0; l + 1 < n; ++l) {
      r[l + 1] += 2.0 * dq[l];                   // 2 x Q'
      r[l + 2] -= 2.0 * dq[l];                   // -2 x^2 Q'
    }
    const double norm = 2.0 * k * (2.0 * k + 1.0);
    for (double& v : r) v /= norm;
    p = r;
  }
  p.resize(static_cast<std::size_t>(order));
  return p;
}

std::string PppmChoice::describe() const {
  return "PPPM: g_ewald " + significant(g_ewald, 8) + ", mesh " + mesh_text(mesh) + ", order " + std::to_string(order) +
         ", estimated RMS force accuracy " + significant(estimated_accuracy, 4) + " (relative " +
         significant(estimated_accuracy / two_charge_force, 4) + "; k-space " + significant(kspace_error, 4) +
         ", real space " + significant(real_space_error, 4) + "), mesh arrays " + bytes_text(grid_bytes) + " per rank";
}

std::string EwaldChoice::describe() const {
  return "Ewald: g_ewald " + significant(g_ewald, 8) + ", kmax " + mesh_text(kmax) + " (" + std::to_string(vectors) +
         " k-vectors), estimated RMS force accuracy " + significant(estimated_accuracy, 4) + " (relative " +
         significant(estimated_accuracy / two_charge_force, 4) + "; k-space " + significant(kspace_error, 4) +
         ", real space " + significant(real_space_error, 4) + ")";
}

double grid_bytes(const std::array<int, 3>& mesh, int order, double margin, const comm::Box3& box, int nranks) {
  const std::array<double, 3> lengths{box.length(0), box.length(1), box.length(2)};
  std::array<int, 3> dims = comm::choose_grid(nranks, lengths);
  if (dims[0] == 0) dims = {nranks, 1, 1};
  double owned = 1, brick = 1, total = 1;
  for (int d = 0; d < 3; ++d) {
    const double own = std::ceil(static_cast<double>(mesh[d]) / dims[d]);
    const double ghost = order + 2.0 * std::ceil(margin * mesh[d] / lengths[d]) + 1.0;
    owned *= own;
    brick *= own + ghost;
    total *= mesh[d];
  }
  const double nzc = mesh[2] / 2 + 1;
  const double real = std::ceil(total / nranks) + static_cast<double>(mesh[1]) * mesh[2];
  const double spectral = std::ceil(static_cast<double>(mesh[0]) * mesh[1] * nzc / nranks) + mesh[0] * nzc;
  // The density and field bricks, and the reshape buffers and the transform's three real arrays, which one rank
  // does without (its transform runs in place on the bricks of the whole mesh).
  const bool one = nranks == 1;
  const double bricks = 4.0 * brick * sizeof(double) + (one ? 0.0 : 4.0 * owned * sizeof(double));
  const double fft_arrays = (one ? 0.0 : 3.0 * real * sizeof(double)) + 2.0 * spectral * 16.0 + spectral * sizeof(double);
  const double fft_work = 3.0 * (3.0 + 2.0) * spectral * 16.0;  // stage arrays and transpose buffers
  return bricks + fft_arrays + fft_work;
}

PppmChoice choose_pppm(const KspaceOptions& o, const comm::Box3& box, const ChargeTotals& c, int nranks) {
  check_common(o, c);
  if (o.order < k_min_order || o.order > k_max_order)
    throw InputError("md.kspace.order = " + std::to_string(o.order) + ": must be " + std::to_string(k_min_order) +
                     " to " + std::to_string(k_max_order));
  const bool mesh_given = o.mesh[0] != 0 || o.mesh[1] != 0 || o.mesh[2] != 0;
  if (mesh_given)
    for (int d = 0; d < 3; ++d)
      if (o.mesh[d] < 2 || o.mesh[d] > k_max_mesh)
        throw InputError("md.kspace.mesh = [" + std::to_string(o.mesh[0]) + ", " + std::to_string(o.mesh[1]) + ", " +
                         std::to_string(o.mesh[2]) + "]: every size must be 2 to " + std::to_string(k_max_mesh) +
                         " (or all 0: chosen)");
  if (!(std::isfinite(o.margin) && o.margin >= 0)) throw InputError("md.kspace: the atoms' margin must be >= 0");

  PppmChoice ch;
  ch.order = o.order;
  ch.two_charge_force = o.two_charge_force;
  ch.accuracy = o.accuracy * o.two_charge_force;
  const double q2 = c.sum_sq * o.qqrd2e;
  const double natoms = static_cast<double>(std::max<std::int64_t>(c.count, 1));
  const double volume = box.volume();
  double g = o.g_ewald > 0 ? o.g_ewald : initial_g_ewald(ch.accuracy, o.cutoff, q2, natoms, volume);

  if (mesh_given) {
    ch.mesh = o.mesh;
  } else {
    for (int d = 0; d < 3; ++d) {
      // LAMMPS's loop: the estimate at h = 1 / g first; while it misses the accuracy, the mesh grows and the next
      // estimate is that of the mesh before, so the loop ends one point above the smallest mesh that meets it.
      const double L = box.length(d);
      int n = static_cast<int>(std::min(std::floor(L * g) + 1.0, static_cast<double>(k_max_mesh) + 1.0));
      double h = 1.0 / g;
      double err = ik_error(h, L, g, o.order, q2, natoms);
      while (n <= k_max_mesh && err > ch.accuracy) {
        err = ik_error(h, L, g, o.order, q2, natoms);
        ++n;
        h = L / n;
      }
      while (n <= k_max_mesh && !factorable(n)) ++n;
      if (n > k_max_mesh)
        throw InputError("md.kspace.accuracy = " + significant(o.accuracy, 6) + " cannot be reached with " +
                         "md.kspace.order = " + std::to_string(o.order) + " on a mesh of at most " +
                         std::to_string(k_max_mesh) + " points a side (g_ewald " + significant(g, 6) +
                         "); give a larger accuracy, a larger order or a longer real-space cutoff");
      ch.mesh[d] = n;
    }
  }

  // g_ewald where the real-space and the k-space estimates are equal (both monotonic in g: the real-space
  // one falls from 2 q2 / sqrt(N rc V) to 0, the k-space one rises from 0), by bisection in g.
  if (o.g_ewald == 0 && q2 > 0) {
    auto f = [&](double gg) {
      return real_space_error(gg, o.cutoff, q2, natoms, volume) - pppm_kspace_error(ch.mesh, box, gg, o.order, q2, natoms);
    };
    double lo = g, hi = g;
    if (f(g) > 0) {
      for (int i = 0; i < 200 && f(hi) > 0; ++i) hi *= 2;
    } else {
      for (int i = 0; i < 200 && f(lo) <= 0; ++i) lo /= 2;
    }
    for (int i = 0; i < 200 && hi - lo > 1e-15 * hi; ++i) {
      const double mid = 0.5 * (lo + hi);
      (f(mid) > 0 ? lo : hi) = mid;
    }
    g = 0.5 * (lo + hi);
  }
  ch.g_ewald = g;
  ch.kspace_error = pppm_kspace_error(ch.mesh, box, g, o.order, q2, natoms);
  ch.real_space_error = real_space_error(g, o.cutoff, q2, natoms, volume);
  ch.estimated_accuracy = std::sqrt(ch.kspace_error * ch.kspace_error + ch.real_space_error * ch.real_space_error);
  if (mesh_given && ch.kspace_error > ch.accuracy)
    throw InputError("md.kspace.mesh = [" + std::to_string(o.mesh[0]) + ", " + std::to_string(o.mesh[1]) + ", " +
                     std::to_string(o.mesh[2]) + "] with md.kspace.order = " + std::to_string(o.order) +
                     " has an estimated k-space RMS force error of " + significant(ch.kspace_error, 4) +
                     " (g_ewald " + significant(g, 6) + "), above md.kspace.accuracy = " + significant(o.accuracy, 6) +
                     " x " + significant(o.two_charge_force, 6) + "; give a finer mesh, or no mesh (chosen)");
  ch.grid_bytes = grid_bytes(ch.mesh, o.order, o.margin, box, nranks);
  if (o.max_grid_bytes > 0 && ch.grid_bytes > o.max_grid_bytes)
    throw InputError(std::string(mesh_given ? "md.kspace.mesh" : "md.kspace.accuracy") + ": the PPPM mesh " +
                     mesh_text(ch.mesh) + " needs about " + bytes_text(ch.grid_bytes) + " of mesh arrays per rank (" +
                     significant(ch.grid_bytes, 4) + " bytes) on " + std::to_string(nranks) + " rank(s), more than the " +
                     bytes_text(o.max_grid_bytes) + " a rank may hold; give " +
                     (mesh_given ? "a coarser mesh" : "a larger accuracy") + " or more ranks");
  return ch;
}

EwaldChoice choose_ewald(const KspaceOptions& o, const comm::Box3& box, const ChargeTotals& c) {
  check_common(o, c);
  const bool kmax_given = o.kmax[0] != 0 || o.kmax[1] != 0 || o.kmax[2] != 0;
  constexpr int k_most = 1000;
  if (kmax_given)
    for (int d = 0; d < 3; ++d)
      if (o.kmax[d] < 1 || o.kmax[d] > k_most)
        throw InputError("md.kspace.kmax: every value must be 1 to " + std::to_string(k_most) + " (or all 0: chosen)");
  EwaldChoice ch;
  ch.two_charge_force = o.two_charge_force;
  ch.accuracy = o.accuracy * o.two_charge_force;
  const double q2 = c.sum_sq * o.qqrd2e;
  const double natoms = static_cast<double>(std::max<std::int64_t>(c.count, 1));
  const double volume = box.volume();
  const double g = o.g_ewald > 0 ? o.g_ewald : initial_g_ewald(ch.accuracy, o.cutoff, q2, natoms, volume);
  ch.g_ewald = g;
  double kerr2 = 0;
  for (int d = 0; d < 3; ++d) {
    const double L = box.length(d);
    int k = kmax_given ? o.kmax[d] : 1;
    if (!kmax_given)
      while (k <= k_most && ewald_side_error(k, L, g, q2, natoms) > ch.accuracy) ++k;
    if (k > k_most)
      throw InputError("md.kspace.accuracy = " + significant(o.accuracy, 6) + " needs more than " +
                       std::to_string(k_most) + " k-vectors a side with Ewald; use PPPM or a larger accuracy");
    ch.kmax[d] = k;
    const double e = ewald_side_error(k, L, g, q2, natoms);
    kerr2 += e * e;
    const double kk = 2.0 * k_pi * k / L;
    ch.k_squared_max = std::max(ch.k_squared_max, kk * kk);
  }
  ch.k_squared_max *= 1.00001;
  // Half of the k-vectors inside the cut: kx > 0; kx = 0, ky > 0; kx = ky = 0, kz > 0.
  const double u[3] = {2.0 * k_pi / box.length(0), 2.0 * k_pi / box.length(1), 2.0 * k_pi / box.length(2)};
  long long count = 0;
  for (int kx = 0; kx <= ch.kmax[0]; ++kx)
    for (int ky = -ch.kmax[1]; ky <= ch.kmax[1]; ++ky)
      for (int kz = -ch.kmax[2]; kz <= ch.kmax[2]; ++kz) {
        if (kx == 0 && (ky < 0 || (ky == 0 && kz <= 0))) continue;
        const double k2 = u[0] * u[0] * kx * kx + u[1] * u[1] * ky * ky + u[2] * u[2] * kz * kz;
        if (k2 <= ch.k_squared_max) ++count;
      }
  ch.vectors = count;
  ch.kspace_error = std::sqrt(kerr2 / 3.0);
  ch.real_space_error = real_space_error(g, o.cutoff, q2, natoms, volume);
  ch.estimated_accuracy = std::sqrt(ch.kspace_error * ch.kspace_error + ch.real_space_error * ch.real_space_error);
  return ch;
}

std::string neutrality_warning(const ChargeTotals& c) {
  if (std::fabs(c.sum) <= k_neutral_charge) return "";
  return "System is not charge neutral, net charge = " + significant(c.sum, 8) +
         ": the k-space sum adds a uniform neutralising background (energy -pi Q^2 / (2 g_ewald^2 V))";
}

}  // namespace spotrun::md::kspace
