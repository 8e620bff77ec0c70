#pragma once
// The kernels that move particle fields (particles::Fields) through message buffers of 8-byte words, shared by
// particles::Halo and particles::Distributor: the element type of each kind of field, a field's block in a
// message, and the functors that pack a list of particles into a block and unpack a block.
#include <Kokkos_Core.hpp>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "solvers/particles/fields.hpp"

namespace spotrun::particles::impl {

// Grows a buffer to hold n elements (contents not kept), with a quarter to spare.
template <class View>
void ensure(View& v, std::size_t n) {
  if (v.extent(0) < n) v = View(Kokkos::view_alloc(v.label(), Kokkos::WithoutInitializing), n + n / 4 + 64);
}

// The element type and component count of each kind of field, and access to component c of particle i.
template <class V>
struct Elem;
template <>
struct Elem<Vec3View> {
  using T = double;
  KOKKOS_INLINE_FUNCTION static constexpr int count(const Vec3View&) { return 3; }
  KOKKOS_INLINE_FUNCTION static double& at(const Vec3View& v, int i, int c) { return v(i, c); }
};
template <>
struct Elem<DoubleView> {
  using T = double;
  KOKKOS_INLINE_FUNCTION static constexpr int count(const DoubleView&) { return 1; }
  KOKKOS_INLINE_FUNCTION static double& at(const DoubleView& v, int i, int) { return v(i); }
};
template <>
struct Elem<IntView> {
  using T = int;
  KOKKOS_INLINE_FUNCTION static constexpr int count(const IntView&) { return 1; }
  KOKKOS_INLINE_FUNCTION static int& at(const IntView& v, int i, int) { return v(i); }
};
template <>
struct Elem<Int64View> {
  using T = std::int64_t;
  KOKKOS_INLINE_FUNCTION static constexpr int count(const Int64View&) { return 1; }
  KOKKOS_INLINE_FUNCTION static std::int64_t& at(const Int64View& v, int i, int) { return v(i); }
};
template <>
struct Elem<Int3View> {
  using T = int;
  KOKKOS_INLINE_FUNCTION static constexpr int count(const Int3View&) { return 3; }
  KOKKOS_INLINE_FUNCTION static int& at(const Int3View& v, int i, int c) { return v(i, c); }
};
// Rows of 64-bit integers whose length is the view's second extent (a per-particle list: bonds).
template <>
struct Elem<Int64RowsView> {
  using T = std::int64_t;
  KOKKOS_INLINE_FUNCTION static int count(const Int64RowsView& v) { return static_cast<int>(v.extent(1)); }
  KOKKOS_INLINE_FUNCTION static std::int64_t& at(const Int64RowsView& v, int i, int c) { return v(i, c); }
};

// Calls fn(view) with the field's view as its own type.
template <class Fn>
void visit(const Fields::Field& f, Fn&& fn) {
  switch (f.kind) {
    case Fields::Kind::vec3: fn(*static_cast<Vec3View*>(f.view)); break;
    case Fields::Kind::scalar: fn(*static_cast<DoubleView*>(f.view)); break;
    case Fields::Kind::int32: fn(*static_cast<IntView*>(f.view)); break;
    case Fields::Kind::int64: fn(*static_cast<Int64View*>(f.view)); break;
    case Fields::Kind::int3: fn(*static_cast<Int3View*>(f.view)); break;
    case Fields::Kind::int64_rows: fn(*static_cast<Int64RowsView*>(f.view)); break;
  }
}

// Bytes of one particle's value of a field.
inline std::size_t element_bytes(const Fields::Field& f) {
  std::size_t b = 0;
  visit(f, [&b](const auto& v) {
    using V = std::decay_t<decltype(v)>;
    b = sizeof(typename Elem<V>::T) * static_cast<std::size_t>(Elem<V>::count(v));
  });
  return b;
}

// 8-byte words of one field's block in a message of n particles.
inline std::size_t block_words(const Fields::Field& f, std::size_t n) { return (n * element_bytes(f) + 7) / 8; }

// 8-byte words of a message of n particles: the fields' blocks one after the other.
inline std::size_t message_words(const Fields& fields, std::size_t n) {
  std::size_t w = 0;
  for (const auto& f : fields.fields()) w += block_words(f, n);
  return w;
}

// Value of particle i's component c as sent: the position's component d gets the swap's shift.
template <class V>
KOKKOS_INLINE_FUNCTION typename Elem<V>::T sent(const V& v, int i, int c, bool shifted, int d, double shift) {
  if constexpr (std::is_same_v<V, Vec3View>) {
    if (shifted) return v(i, c) + (c == d ? shift : 0.0);
  }
  return Elem<V>::at(v, i, c);
}

// Packs the particles of a send list (its entries from list_first on) into a block starting at word `word` of buf.
template <class V>
struct Pack {
  V v;
  IntView list;
  DoubleView buf;
  std::size_t word;
  bool shifted;
  int d;
  double shift;
  int list_first = 0;
  KOKKOS_INLINE_FUNCTION void operator()(int j) const {
    using E = Elem<V>;
    auto* r = reinterpret_cast<typename E::T*>(buf.data() + word);
    const int i = list(list_first + j), nc = E::count(v);
    for (int c = 0; c < nc; ++c) r[nc * j + c] = sent(v, i, c, shifted, d, shift);
  }
};

// Unpacks a block into the particles from `first` on.
template <class V>
struct Unpack {
  V v;
  DoubleView buf;
  std::size_t word;
  int first;
  KOKKOS_INLINE_FUNCTION void operator()(int j) const {
    using E = Elem<V>;
    const auto* r = reinterpret_cast<const typename E::T*>(buf.data() + word);
    const int nc = E::count(v);
    for (int c = 0; c < nc; ++c) E::at(v, first + j, c) = r[nc * j + c];
  }
};

// Unpacks a block into the particles target(target_first + j) of its rows j; rows whose target is < 0 are dropped.
template <class V>
struct UnpackTo {
  V v;
  DoubleView buf;
  std::size_t word;
  IntView target;
  int target_first;
  KOKKOS_INLINE_FUNCTION void operator()(int j) const {
    using E = Elem<V>;
    const int to = target(target_first + j);
    if (to < 0) return;
    const auto* r = reinterpret_cast<const typename E::T*>(buf.data() + word);
    const int nc = E::count(v);
    for (int c = 0; c < nc; ++c) E::at(v, to, c) = r[nc * j + c];
  }
};

}  // namespace spotrun::particles::impl
