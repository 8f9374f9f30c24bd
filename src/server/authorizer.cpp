#include "server/authorizer.h"

#include <algorithm>

namespace tessera {

namespace {

constexpr std::string_view kTeamPrefix = "team:";

bool MemberOf(const Roles& roles, const std::string& queue) {
  return std::any_of(roles.teams.begin(), roles.teams.end(),
                     [&](const std::string& root) { return InQueueSubtree(queue, root); });
}

std::string TeamsText(const Roles& roles) {
  if (roles.teams.empty()) return "no team";
  std::string out;
  for (const auto& t : roles.teams) out += (out.empty() ? "team:" : ", team:") + t;
  return out;
}

AccessDecision Allow() { return {true, ""}; }
AccessDecision Deny(std::string reason) { return {false, std::move(reason)}; }

bool IsWrite(Action a) {
  return a == Action::kSubmit || a == Action::kRelease || a == Action::kCancel ||
         a == Action::kPurge;
}

const char* Verb(Action a) {
  switch (a) {
    case Action::kSubmit:
      return "submit to";
    case Action::kRelease:
      return "release jobs of";
    case Action::kCancel:
      return "cancel jobs of";
    case Action::kPurge:
      return "purge jobs of";
    case Action::kReadLogs:
      return "read the logs of";
    case Action::kExec:
      return "exec into jobs of";
    default:
      return "read jobs of";
  }
}

AccessDecision AuthorizeNode(const Caller& caller, const AccessRequest& request) {
  if (request.action == Action::kHealth) return Allow();
  if (request.action != Action::kAgent) {
    return Deny("a node credential may call the agent API only");
  }
  for (const auto& node : request.nodes) {
    if (!caller.nodes.contains(node)) {
      return Deny("this credential belongs to node " + caller.name + ", not to " + node +
                  "; a node acts only for itself");
    }
  }
  return Allow();
}

// A user's access to one queue's jobs (or, with an empty queue, to some queue).
AccessDecision AuthorizeJobAction(const Caller& caller, const Roles& roles,
                                  const AccessRequest& request) {
  const Action a = request.action;
  if (roles.admin) return Allow();
  const bool member = request.queue.empty() ? !roles.teams.empty() : MemberOf(roles, request.queue);
  if (member) return Allow();
  const bool reader = roles.viewer || roles.gateway;
  if (!IsWrite(a) && a != Action::kReadLogs && a != Action::kExec && reader) return Allow();
  const std::string where = request.queue.empty() ? "any queue" : "queue " + request.queue;
  return Deny("user " + caller.name + " may not " + Verb(a) + " " + where + " (groups give " +
              TeamsText(roles) + (reader ? ", read-only" : "") + ")");
}

}  // namespace

Roles RolesOf(const std::vector<std::string>& groups) {
  Roles r;
  for (const auto& g : groups) {
    if (g == "tessera:admins") r.admin = true;
    if (g == "tessera:viewers") r.viewer = true;
    if (g == "tessera:gateway") r.gateway = true;
    if (g == "tessera:metrics") r.metrics = true;
    if (g.starts_with(kTeamPrefix) && g.size() > kTeamPrefix.size()) {
      r.teams.push_back(g.substr(kTeamPrefix.size()));
    }
  }
  return r;
}

bool InQueueSubtree(const std::string& queue, const std::string& root) {
  if (!queue.starts_with(root)) return false;
  return queue.size() == root.size() || queue[root.size()] == '/';
}

AccessDecision Authorize(const Caller& caller, const AccessRequest& request) {
  if (request.action == Action::kHealth) return Allow();
  if (caller.kind == Caller::Kind::kAnonymous) return Deny("authentication required");
  if (caller.kind == Caller::Kind::kNode) return AuthorizeNode(caller, request);
  const Roles roles = RolesOf(caller.groups);
  switch (request.action) {
    case Action::kHealth:
      return Allow();
    case Action::kAgent:
      return Deny("only agents, with their node credential, may call the agent API");
    case Action::kStatus:
    case Action::kMetrics:
      return Allow();
    case Action::kListNodes:
    case Action::kListQueues:
    case Action::kWatchEvents:
    case Action::kListJobs:
      if (roles.metrics && !roles.admin && !roles.viewer && !roles.gateway && roles.teams.empty()) {
        return Deny("user " + caller.name + " is a metrics scraper: status and metrics only");
      }
      return Allow();
    case Action::kExport:
      if (roles.admin) return Allow();
      return Deny("user " + caller.name +
                  " may not export the cluster (job specs with their env): admins only");
    case Action::kReadJob:
    case Action::kReadLogs:
    case Action::kExec:
    case Action::kSubmit:
    case Action::kRelease:
    case Action::kCancel:
    case Action::kPurge:
      return AuthorizeJobAction(caller, roles, request);
  }
  return Deny("unknown action");
}

bool MaySeeQueue(const Caller& caller, const std::string& queue) {
  if (caller.kind != Caller::Kind::kUser) return false;
  const Roles roles = RolesOf(caller.groups);
  return roles.admin || roles.viewer || roles.gateway || MemberOf(roles, queue);
}

bool MaySeeEnv(const Caller& caller, const std::string& queue) {
  if (caller.kind != Caller::Kind::kUser) return false;
  const Roles roles = RolesOf(caller.groups);
  return roles.admin || MemberOf(roles, queue);
}

}  // namespace tessera
