#include "spec/queue_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "spec/text.h"

namespace tessera {

namespace {

constexpr std::int64_t kMaxQueueFileBytes = 16 << 20;

class QueueFileParser {
 public:
  explicit QueueFileParser(const std::string& source) : source_(source) {}

  std::unexpected<Error> Fail(const std::string& key, const std::string& why) const {
    return InvalidArgument(source_ + ": key '" + key + "': " + why);
  }

  Status CheckKeys(const YAML::Node& map, const std::string& path,
                   std::initializer_list<std::string_view> known) const {
    if (!map.IsMap()) return Fail(path, "expected a mapping (key: value lines)");
    for (const auto& entry : map) {
      const YAML::Node k = entry.first;
      const std::string name = k.IsScalar() ? k.Scalar() : "?";
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        std::string list;
        for (auto s : known) list += (list.empty() ? "" : ", ") + std::string(s);
        return Fail(path.empty() ? name : path + "." + name, "unknown key (known: " + list + ")");
      }
    }
    return {};
  }

  Result<double> Number(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) return Fail(key, "expected a number");
    auto v = ParseFiniteNumber(n.Scalar());
    if (!v) return Fail(key, "'" + n.Scalar() + "' is not a number");
    return *v;
  }

  // 12 (absolute) or "25%" (of the cluster).
  Result<QuotaAmount> Amount(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) return Fail(key, "expected a number or a percentage such as 25%");
    std::string s = n.Scalar();
    QuotaAmount a;
    a.set = true;
    if (!s.empty() && s.back() == '%') {
      a.fraction = true;
      s.pop_back();
    }
    auto v = ParseFiniteNumber(s);
    if (!v) return Fail(key, "'" + n.Scalar() + "' is not a number or a percentage such as 25%");
    a.value = a.fraction ? *v / 100.0 : *v;
    return a;
  }

  Result<QuotaSpec> Quota(const YAML::Node& n, const std::string& key) const {
    QuotaSpec q;
    if (auto ok = CheckKeys(n, key, {"gpu", "cpu", "memory"}); !ok)
      return std::unexpected(ok.error());
    struct Field {
      const char* name;
      QuotaAmount* out;
    };
    for (const Field f : {Field{"gpu", &q.gpu}, Field{"cpu", &q.cpu}, Field{"memory", &q.memory}}) {
      if (!n[f.name]) continue;
      auto a = Amount(n[f.name], key + "." + f.name);
      if (!a) return std::unexpected(a.error());
      *f.out = *a;
    }
    return q;
  }

  Result<QueueTreeSpec> Parse(const YAML::Node& root) const {
    QueueTreeSpec spec;
    if (!root || root.IsNull()) return Fail("queues", "the file is empty");
    if (auto ok = CheckKeys(root, "", {"queues", "reclaim", "unmatched"}); !ok) {
      return std::unexpected(ok.error());
    }
    if (const YAML::Node r = root["reclaim"]) {
      if (auto ok = CheckKeys(r, "reclaim", {"graceSeconds"}); !ok)
        return std::unexpected(ok.error());
      if (r["graceSeconds"]) {
        auto g = Number(r["graceSeconds"], "reclaim.graceSeconds");
        if (!g) return std::unexpected(g.error());
        if (*g < 0) return Fail("reclaim.graceSeconds", "negative");
        constexpr double kMaxGraceSeconds = 7 * 24 * 3600;  // a week: longer is a typo
        if (*g > kMaxGraceSeconds) {
          return Fail("reclaim.graceSeconds",
                      "at most " + std::to_string(int(kMaxGraceSeconds)) + " (a week)");
        }
        spec.reclaim_grace = FromSeconds(*g);
      }
    }
    if (const YAML::Node u = root["unmatched"]) {
      if (!u.IsScalar()) return Fail("unmatched", "expected 'hash' or a leaf queue's name");
      spec.unmatched = u.Scalar();
    }
    const YAML::Node list = root["queues"];
    if (!list || !list.IsSequence()) return Fail("queues", "expected a list of queues");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string key = "queues[" + std::to_string(i) + "]";
      const YAML::Node q = list[i];
      if (auto ok = CheckKeys(
              q, key,
              {"name", "parent", "guaranteed", "borrowLimit", "weight", "priority", "users"});
          !ok) {
        return std::unexpected(ok.error());
      }
      QueueSpec s;
      if (!q["name"] || !q["name"].IsScalar()) return Fail(key + ".name", "required");
      s.name = q["name"].Scalar();
      if (q["parent"]) {
        if (!q["parent"].IsScalar()) return Fail(key + ".parent", "expected a queue name");
        s.parent = q["parent"].Scalar();
      }
      if (q["guaranteed"]) {
        auto g = Quota(q["guaranteed"], key + ".guaranteed");
        if (!g) return std::unexpected(g.error());
        s.guaranteed = *g;
      }
      if (q["borrowLimit"]) {
        auto b = Quota(q["borrowLimit"], key + ".borrowLimit");
        if (!b) return std::unexpected(b.error());
        s.borrow_limit = *b;
      }
      if (q["weight"]) {
        auto w = Number(q["weight"], key + ".weight");
        if (!w) return std::unexpected(w.error());
        s.weight = *w;
      }
      if (q["priority"]) {
        auto p = Number(q["priority"], key + ".priority");
        if (!p) return std::unexpected(p.error());
        if (*p != static_cast<double>(static_cast<int>(*p))) {
          return Fail(key + ".priority", "expected a whole number");
        }
        s.priority = static_cast<int>(*p);
      }
      if (const YAML::Node users = q["users"]) {
        if (!users.IsSequence()) return Fail(key + ".users", "expected a list of user names");
        for (std::size_t u = 0; u < users.size(); ++u) {
          if (!users[u].IsScalar() || users[u].Scalar().empty()) {
            return Fail(key + ".users[" + std::to_string(u) + "]", "expected a user name");
          }
          s.users.push_back(users[u].Scalar());
        }
      }
      spec.queues.push_back(std::move(s));
    }
    return spec;
  }

 private:
  std::string source_;
};

}  // namespace

Result<QueueTreeSpec> ParseQueueFile(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(source + ":" + std::to_string(e.mark.line + 1) + ":" +
                           std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  try {
    return QueueFileParser(source).Parse(root);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(source + ": " + e.msg);
  }
}

Result<QueueTreeSpec> ReadQueueFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return IoError(path + ": cannot open");
  std::ostringstream ss;
  ss << f.rdbuf();
  if (ss.str().size() > kMaxQueueFileBytes) return InvalidArgument(path + ": larger than 16 MiB");
  return ParseQueueFile(ss.str(), path);
}

namespace {

nlohmann::json QuotaJson(const QuotaSpec& q) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, a] :
       {std::pair{"gpu", &q.gpu}, std::pair{"cpu", &q.cpu}, std::pair{"memory", &q.memory}}) {
    if (!a->set) continue;
    if (a->fraction) {
      j[name] = nlohmann::json(a->value * 100).dump() + "%";
    } else {
      j[name] = a->value;
    }
  }
  return j;
}

}  // namespace

nlohmann::json QueueFileJson(const QueueTreeSpec& spec) {
  nlohmann::json queues = nlohmann::json::array();
  for (const QueueSpec& q : spec.queues) {
    nlohmann::json j = {{"name", q.name}, {"weight", q.weight}, {"priority", q.priority}};
    if (!q.parent.empty()) j["parent"] = q.parent;
    if (auto g = QuotaJson(q.guaranteed); !g.empty()) j["guaranteed"] = std::move(g);
    if (auto b = QuotaJson(q.borrow_limit); !b.empty()) j["borrowLimit"] = std::move(b);
    if (!q.users.empty()) j["users"] = q.users;
    queues.push_back(std::move(j));
  }
  nlohmann::json out = {{"reclaim", {{"graceSeconds", ToSeconds(spec.reclaim_grace)}}},
                        {"queues", std::move(queues)}};
  if (!spec.unmatched.empty()) out["unmatched"] = spec.unmatched;
  return out;
}

}  // namespace tessera
