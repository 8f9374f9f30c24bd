// One task's place as text, "NODE:GPUS": the node's name, a colon, and its GPU indices as
// ranges ("h100-0003:0-3", "h100-0001:0,2,5"); a GPU share adds "@MILLI" ("a100-0002:1@500");
// a task without GPUs is the node's name alone. The scheduling cycle's record writes it
// (server/cycle_record.h) and the simulator's replay of a live export reads it back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera {

struct TaskPlace {
  std::string node;
  std::uint16_t gpu_mask = 0;  // bit i = GPU i of the node
  std::int32_t gpu_milli = 0;  // per GPU of the mask: 1000 = whole GPUs
  friend bool operator==(const TaskPlace&, const TaskPlace&) = default;
};

std::string TaskPlaceText(std::string_view node, std::uint16_t gpu_mask, std::int32_t gpu_milli);

// Nullopt when `text` is not of that form (no node, a GPU index past 15, a bad share).
std::optional<TaskPlace> ParseTaskPlace(std::string_view text);

}  // namespace tessera
