// The host force loop's gather and scatter passes (solvers/md/force.hpp, RowsOfThree; AVX2 in an AVX2
// build) against plain scalar loops written here: bitwise the same separations and the same forces after
// the reactions, for every row length around the four-neighbour blocks, with the neighbours in random order.
// The position and force arrays end exactly at a page that may not be read or written, and the last atom
// is always a neighbour: a pass that touched anything past the last row would crash the test.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "solvers/md/force.hpp"
#include "support/mpi_test.hpp"

SPOTRUN_TEST_RANKS(1);

using spotrun::md::impl::RowsOfThree;

namespace {

// Rows of three doubles ending at a page boundary, the next page without access.
class GuardedRows {
 public:
  explicit GuardedRows(int rows) : m_rows(rows) {
    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t bytes = 3 * sizeof(double) * static_cast<std::size_t>(rows);
    const std::size_t data_pages = (bytes + page - 1) / page;
    m_length = (data_pages + 1) * page;
    void* p = mmap(nullptr, m_length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
    m_base = static_cast<char*>(p);
    if (mprotect(m_base + data_pages * page, page, PROT_NONE) != 0) throw std::runtime_error("mprotect failed");
    m_rows_begin = reinterpret_cast<double*>(m_base + data_pages * page - bytes);
  }
  ~GuardedRows() { munmap(m_base, m_length); }
  GuardedRows(const GuardedRows&) = delete;
  GuardedRows& operator=(const GuardedRows&) = delete;
  double* data() { return m_rows_begin; }
  int rows() const { return m_rows; }

 private:
  int m_rows;
  std::size_t m_length = 0;
  char* m_base = nullptr;
  double* m_rows_begin = nullptr;
};

// n distinct atoms out of rows, the last one among them, in random order.
std::vector<int> neighbours(int n, int rows, std::mt19937_64& rng) {
  std::vector<int> all(rows - 1);
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  std::vector<int> row(all.begin(), all.begin() + std::max(0, n - 1));
  if (n > 0) row.push_back(rows - 1);
  std::shuffle(row.begin(), row.end(), rng);
  return row;
}

// Values of mixed magnitudes and signs, so that every subtraction rounds.
double value(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-8, 8);
  return std::ldexp(mantissa(rng), exponent(rng));
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

const int k_lengths[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 31, 63, 64};

TEST(ForceRows, GatherEqualsTheScalarLoop) {
  std::mt19937_64 rng(20261203);
  GuardedRows x(70);
  for (int k = 0; k < 3 * x.rows(); ++k) x.data()[k] = value(rng);
  for (const int n : k_lengths) {
    const std::vector<int> row = neighbours(n, x.rows(), rng);
    const double xi = value(rng), yi = value(rng), zi = value(rng);
    double dx[64], dy[64], dz[64];
    RowsOfThree::gather(x.data(), row.data(), n, xi, yi, zi, dx, dy, dz);
    for (int k = 0; k < n; ++k) {
      const double* xj = x.data() + 3 * row[k];
      EXPECT_TRUE(same_bits(dx[k], xi - xj[0])) << "n = " << n << ", neighbour " << k << ": x";
      EXPECT_TRUE(same_bits(dy[k], yi - xj[1])) << "n = " << n << ", neighbour " << k << ": y";
      EXPECT_TRUE(same_bits(dz[k], zi - xj[2])) << "n = " << n << ", neighbour " << k << ": z";
    }
  }
}

TEST(ForceRows, ScatterEqualsTheScalarLoop) {
  std::mt19937_64 rng(87287);
  GuardedRows f(70);
  for (const int n : k_lengths) {
    for (int k = 0; k < 3 * f.rows(); ++k) f.data()[k] = value(rng);
    std::vector<double> want(f.data(), f.data() + 3 * f.rows());
    const std::vector<int> row = neighbours(n, f.rows(), rng);
    double rx[64], ry[64], rz[64];
    for (int k = 0; k < n; ++k) {
      rx[k] = value(rng);
      ry[k] = value(rng);
      rz[k] = value(rng);
      want[3 * row[k]] -= rx[k];
      want[3 * row[k] + 1] -= ry[k];
      want[3 * row[k] + 2] -= rz[k];
    }
    RowsOfThree::scatter(f.data(), row.data(), n, rx, ry, rz);
    for (int k = 0; k < 3 * f.rows(); ++k)
      EXPECT_TRUE(same_bits(f.data()[k], want[k])) << "n = " << n << ", atom " << k / 3 << ", component " << k % 3;
  }
}

}  // namespace
