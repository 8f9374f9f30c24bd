// Strongly typed indices, so that a node index can never be passed where a job index is meant.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>

namespace tessera {

template <typename Tag>
struct Id {
  std::uint32_t value = UINT32_MAX;
  constexpr Id() = default;
  constexpr explicit Id(std::uint32_t v) : value(v) {}
  constexpr bool valid() const { return value != UINT32_MAX; }
  friend constexpr auto operator<=>(const Id&, const Id&) = default;
};

using NodeId = Id<struct NodeTag>;
using JobId = Id<struct JobTag>;

}  // namespace tessera

template <typename Tag>
struct std::hash<tessera::Id<Tag>> {
  std::size_t operator()(const tessera::Id<Tag>& id) const noexcept { return id.value; }
};
