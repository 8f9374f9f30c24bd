// GPU models (H100, A100, T4, ...) interned to small ids per cluster, and sets of accepted
// models as 64-bit masks so that "may this task run on this node" is one AND.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

using GpuModelId = std::uint8_t;
inline constexpr int kMaxGpuModels = 64;

// A set of GPU models. `Any()` accepts every model, including ones interned later.
class GpuModelSet {
 public:
  static GpuModelSet Any() { return GpuModelSet(~0ULL); }
  static GpuModelSet None() { return GpuModelSet(0); }
  void Add(GpuModelId id) { bits_ |= (1ULL << id); }
  bool Contains(GpuModelId id) const { return (bits_ >> id) & 1ULL; }
  bool IsAny() const { return bits_ == ~0ULL; }
  std::uint64_t bits() const { return bits_; }
  friend bool operator==(const GpuModelSet&, const GpuModelSet&) = default;

 private:
  explicit GpuModelSet(std::uint64_t bits) : bits_(bits) {}
  std::uint64_t bits_;
};

// Names of the GPU models present in one cluster. Ids are given in order of first sight.
class GpuModelCatalog {
 public:
  // Returns the id of `name`, adding it when new. REQUIRES: fewer than kMaxGpuModels models.
  std::optional<GpuModelId> Intern(std::string_view name);
  std::optional<GpuModelId> Find(std::string_view name) const;
  const std::string& Name(GpuModelId id) const { return names_.at(id); }
  int size() const { return static_cast<int>(names_.size()); }

  // The set of models named in `names`; names unknown to the catalog are ignored (no node
  // has them, so they add nothing). An empty list means any model.
  GpuModelSet Resolve(const std::vector<std::string>& names) const;

 private:
  std::vector<std::string> names_;
  std::map<std::string, GpuModelId, std::less<>> ids_;
};

}  // namespace tessera
