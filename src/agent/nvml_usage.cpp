#include "agent/nvml_usage.h"

#include <dlfcn.h>

namespace tessera {

// The NVML entry points used, with the ABI of nvml.h.
struct NvmlUsage::Api {
  using Device = void*;
  struct Utilization {
    unsigned int gpu;
    unsigned int memory;
  };
  struct Memory {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
  };
  int (*init)() = nullptr;
  int (*shutdown)() = nullptr;
  int (*count)(unsigned int*) = nullptr;
  int (*handle)(unsigned int, Device*) = nullptr;
  int (*utilization)(Device, Utilization*) = nullptr;
  int (*memory)(Device, Memory*) = nullptr;
};

std::unique_ptr<NvmlUsage> NvmlUsage::Open(std::string* why) {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    *why = std::string("NVML not available: ") + (err ? err : "libnvidia-ml.so.1 not found");
    return nullptr;
  }
  auto api = std::make_unique<Api>();
  api->init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
  api->shutdown = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlShutdown"));
  api->count = reinterpret_cast<int (*)(unsigned int*)>(dlsym(lib, "nvmlDeviceGetCount_v2"));
  api->handle = reinterpret_cast<int (*)(unsigned int, Api::Device*)>(
      dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
  api->utilization = reinterpret_cast<int (*)(Api::Device, Api::Utilization*)>(
      dlsym(lib, "nvmlDeviceGetUtilizationRates"));
  api->memory =
      reinterpret_cast<int (*)(Api::Device, Api::Memory*)>(dlsym(lib, "nvmlDeviceGetMemoryInfo"));
  if (!api->init || !api->shutdown || !api->count || !api->handle || !api->utilization ||
      !api->memory) {
    dlclose(lib);
    *why = "NVML: libnvidia-ml.so.1 lacks the expected functions";
    return nullptr;
  }
  if (int rc = api->init(); rc != 0) {
    dlclose(lib);
    *why = "NVML: nvmlInit failed with code " + std::to_string(rc) + " (no driver loaded?)";
    return nullptr;
  }
  std::unique_ptr<NvmlUsage> usage(new NvmlUsage());
  usage->lib_ = lib;
  usage->api_ = std::move(api);
  return usage;
}

NvmlUsage::~NvmlUsage() {
  if (api_ && api_->shutdown) api_->shutdown();
  if (lib_ != nullptr) dlclose(lib_);
}

std::vector<GpuUsageReport> NvmlUsage::Read() const {
  std::vector<GpuUsageReport> out;
  unsigned int count = 0;
  if (api_->count(&count) != 0) return out;
  for (unsigned int i = 0; i < count; ++i) {
    Api::Device dev = nullptr;
    Api::Utilization u{};
    Api::Memory m{};
    if (api_->handle(i, &dev) != 0 || api_->utilization(dev, &u) != 0 || api_->memory(dev, &m) != 0)
      continue;
    out.push_back({0, static_cast<int>(i), u.gpu / 100.0, static_cast<std::int64_t>(m.used)});
  }
  return out;
}

}  // namespace tessera
