#include "gateway/service_registry.h"

#include <algorithm>

namespace tessera::gateway {

std::vector<std::string> ServiceRegistry::Reconcile(const std::vector<ServiceConfig>& configs) {
  std::vector<std::string> problems;
  std::vector<std::pair<std::string, std::shared_ptr<ServiceRoutes>>> next;
  std::lock_guard lock(mu_);
  for (const ServiceConfig& c : configs) {
    auto it = std::find_if(services_.begin(), services_.end(),
                           [&](const auto& s) { return s.first == c.name; });
    if (it != services_.end()) {
      it->second->Update(c);
      next.emplace_back(c.name, it->second);
      continue;
    }
    auto made = ServiceRoutes::Make(c, engine_);
    if (!made) {
      problems.push_back(c.name + ": " + made.error().message);
      continue;
    }
    next.emplace_back(c.name, std::shared_ptr<ServiceRoutes>(std::move(*made)));
  }
  std::sort(next.begin(), next.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  services_ = std::move(next);
  return problems;
}

std::shared_ptr<ServiceRoutes> ServiceRegistry::Find(const std::string& model) const {
  std::lock_guard lock(mu_);
  for (const auto& [name, s] : services_) {
    const ServiceConfig c = s->config();
    if (std::find(c.models.begin(), c.models.end(), model) != c.models.end()) return s;
  }
  for (const auto& [name, s] : services_) {
    const auto slash = name.rfind('/');
    if (name == model || (slash != std::string::npos && name.substr(slash + 1) == model)) return s;
  }
  if (services_.size() == 1 && services_[0].second->config().models.empty()) {
    return services_[0].second;
  }
  return nullptr;
}

std::vector<std::shared_ptr<ServiceRoutes>> ServiceRegistry::All() const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<ServiceRoutes>> out;
  for (const auto& [name, s] : services_) out.push_back(s);
  return out;
}

}  // namespace tessera::gateway
