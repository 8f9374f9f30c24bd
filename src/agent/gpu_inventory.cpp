#include "agent/gpu_inventory.h"

#include <dlfcn.h>

#include <cctype>
#include <charconv>

#include "spec/job_spec.h"

namespace tessera {

namespace {

// The few NVML entry points used, with the ABI of nvml.h.
using NvmlReturn = int;
using NvmlDevice = void*;
struct NvmlMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
using InitFn = NvmlReturn (*)();
using ShutdownFn = NvmlReturn (*)();
using CountFn = NvmlReturn (*)(unsigned int*);
using HandleFn = NvmlReturn (*)(unsigned int, NvmlDevice*);
using NameFn = NvmlReturn (*)(NvmlDevice, char*, unsigned int);
using MemoryFn = NvmlReturn (*)(NvmlDevice, NvmlMemory*);
using DriverFn = NvmlReturn (*)(char*, unsigned int);

std::string Trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

}  // namespace

std::string NormalizeGpuModel(const std::string& device_name) {
  std::string name = Trim(device_name);
  for (const char* prefix : {"NVIDIA ", "Tesla ", "GeForce ", "Quadro "}) {
    if (name.rfind(prefix, 0) == 0) name = name.substr(std::string(prefix).size());
  }
  std::vector<std::string> tokens;
  std::string cur;
  for (char c : name) {
    if (c == ' ' || c == '-' || c == '_') {
      if (!cur.empty()) tokens.push_back(cur);
      cur.clear();
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '.') {
      cur += c;
    }
  }
  if (!cur.empty()) tokens.push_back(cur);
  if (tokens.empty()) return "GPU";
  std::string model = tokens[0];
  if ((model == "RTX" || model == "GTX") && tokens.size() > 1) model += tokens[1];
  if (model.size() > 32) model.resize(32);
  return model;
}

Result<GpuInventory> SimulatedGpus(const std::string& spec, const std::string& node) {
  const auto x = spec.find_first_of("xX");
  if (x == std::string::npos || x == 0) {
    return InvalidArgument("--simulate-gpus: expected COUNTxMODEL such as 8xH100, got \"" + spec +
                           "\"");
  }
  int count = -1;
  const std::string count_text = Trim(spec.substr(0, x));
  auto [ptr, ec] = std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
  if (ec != std::errc() || ptr != count_text.data() + count_text.size() || count < 0 ||
      count > kMaxGpusPerTask) {
    return InvalidArgument("--simulate-gpus: count must be 0.." + std::to_string(kMaxGpusPerTask) +
                           ", got \"" + count_text + "\"");
  }
  const std::string model = Trim(spec.substr(x + 1));
  if (model.empty() || model.size() > 32) {
    return InvalidArgument("--simulate-gpus: a model name (1-32 characters) must follow the count");
  }
  for (char c : model) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      return InvalidArgument("--simulate-gpus: model names are letters, digits, '-', '_', '.'");
    }
  }
  GpuInventory inv;
  inv.simulated = true;
  inv.source = "simulated";
  std::int64_t memory = KnownGpuMemoryMib(model);
  if (memory == 0) memory = 80 * 1024;
  for (int i = 0; i < count; ++i) {
    GpuInfo g;
    g.index = i;
    g.model = model;
    g.name = "simulated " + model;
    g.uuid = "SIM-" + node + "-" + std::to_string(i);
    g.memory_mib = memory;
    inv.gpus.push_back(g);
  }
  return inv;
}

Result<GpuInventory> NvmlGpus() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    return NotFound(std::string("NVML not available: ") +
                    (err ? err : "libnvidia-ml.so.1 not found"));
  }
  auto sym = [&](const char* name) { return dlsym(lib, name); };
  auto init = reinterpret_cast<InitFn>(sym("nvmlInit_v2"));
  auto shutdown = reinterpret_cast<ShutdownFn>(sym("nvmlShutdown"));
  auto count_fn = reinterpret_cast<CountFn>(sym("nvmlDeviceGetCount_v2"));
  auto handle_fn = reinterpret_cast<HandleFn>(sym("nvmlDeviceGetHandleByIndex_v2"));
  auto name_fn = reinterpret_cast<NameFn>(sym("nvmlDeviceGetName"));
  auto uuid_fn = reinterpret_cast<NameFn>(sym("nvmlDeviceGetUUID"));
  auto memory_fn = reinterpret_cast<MemoryFn>(sym("nvmlDeviceGetMemoryInfo"));
  auto driver_fn = reinterpret_cast<DriverFn>(sym("nvmlSystemGetDriverVersion"));
  if (!init || !shutdown || !count_fn || !handle_fn || !name_fn || !uuid_fn || !memory_fn) {
    dlclose(lib);
    return NotFound("NVML: libnvidia-ml.so.1 lacks the expected functions");
  }
  if (int rc = init(); rc != 0) {
    dlclose(lib);
    return NotFound("NVML: nvmlInit failed with code " + std::to_string(rc) +
                    " (no driver loaded?)");
  }
  GpuInventory inv;
  char driver[96] = {0};
  if (driver_fn && driver_fn(driver, sizeof driver) == 0) {
    inv.source = std::string("nvml (driver ") + driver + ")";
  } else {
    inv.source = "nvml";
  }
  unsigned int count = 0;
  Status status;
  if (count_fn(&count) != 0) {
    status = NotFound("NVML: cannot count devices");
  } else if (count > static_cast<unsigned>(kMaxGpusPerTask)) {
    status =
        InvalidArgument("NVML reports " + std::to_string(count) + " GPUs; at most 16 per node");
  } else {
    for (unsigned int i = 0; i < count && status; ++i) {
      NvmlDevice dev = nullptr;
      if (handle_fn(i, &dev) != 0) {
        status = NotFound("NVML: cannot open GPU " + std::to_string(i));
        break;
      }
      char name[96] = {0};
      char uuid[96] = {0};
      NvmlMemory mem{};
      name_fn(dev, name, sizeof name);
      uuid_fn(dev, uuid, sizeof uuid);
      memory_fn(dev, &mem);
      GpuInfo g;
      g.index = static_cast<int>(i);
      g.name = name;
      g.model = NormalizeGpuModel(name);
      g.uuid = uuid;
      g.memory_mib = static_cast<std::int64_t>(mem.total >> 20);
      inv.gpus.push_back(g);
    }
  }
  shutdown();
  dlclose(lib);
  if (!status) return std::unexpected(status.error());
  if (inv.gpus.empty()) return NotFound("NVML: the driver reports no GPU");
  return inv;
}

}  // namespace tessera
