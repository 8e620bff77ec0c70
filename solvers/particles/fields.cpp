#include "fields.hpp"

#include <stdexcept>

#include "impl/field_kernels.hpp"

namespace spotrun::particles {

using impl::element_bytes;

Fields& Fields::position(Vec3View& x) {
  if (position_view()) throw std::invalid_argument("particles::Fields: a second position field");
  m_fields.push_back({Kind::vec3, &x, true});
  return *this;
}
Fields& Fields::add(Vec3View& v) {
  m_fields.push_back({Kind::vec3, &v, false});
  return *this;
}
Fields& Fields::add(DoubleView& v) {
  m_fields.push_back({Kind::scalar, &v, false});
  return *this;
}
Fields& Fields::add(IntView& v) {
  m_fields.push_back({Kind::int32, &v, false});
  return *this;
}
Fields& Fields::add(Int64View& v) {
  m_fields.push_back({Kind::int64, &v, false});
  return *this;
}
Fields& Fields::add(Int3View& v) {
  m_fields.push_back({Kind::int3, &v, false});
  return *this;
}
Fields& Fields::add(Int64RowsView& v) {
  m_fields.push_back({Kind::int64_rows, &v, false});
  return *this;
}

const Vec3View* Fields::position_view() const {
  for (const auto& f : m_fields)
    if (f.shifted) return static_cast<const Vec3View*>(f.view);
  return nullptr;
}

std::size_t Fields::bytes_per_particle() const {
  std::size_t b = 0;
  for (const auto& f : m_fields) b += element_bytes(f);
  return b;
}

}  // namespace spotrun::particles
