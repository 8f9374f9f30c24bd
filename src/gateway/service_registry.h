// The services the gateway fronts, by name, and which one a request's `model` names. Discovery
// (the controller watcher, or the --backend list) hands it the whole set each time; services
// that stay keep their routing state. Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/engine_profile.h"
#include "gateway/service_routes.h"

namespace tessera::gateway {

class ServiceRegistry {
 public:
  explicit ServiceRegistry(EngineProfile engine) : engine_(std::move(engine)) {}

  // Creates, updates and removes services to match `configs`. Returns one message per service
  // that could not be set up (an unknown policy), naming it.
  std::vector<std::string> Reconcile(const std::vector<ServiceConfig>& configs);

  // The service a request for `model` goes to: one listing the model, else one whose name (or
  // the name after its queue) is the model, else the only service when it accepts any model.
  std::shared_ptr<ServiceRoutes> Find(const std::string& model) const;
  std::vector<std::shared_ptr<ServiceRoutes>> All() const;

 private:
  EngineProfile engine_;
  mutable std::mutex mu_;
  std::vector<std::pair<std::string, std::shared_ptr<ServiceRoutes>>> services_;  // by name
};

}  // namespace tessera::gateway
