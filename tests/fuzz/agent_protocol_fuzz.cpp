// The controller <-> agent protocol (spec/protocol.h): the first byte picks the message, the
// rest is its JSON text, read with ParseJson and the message's FromJson. Properties: never
// crashes or throws; a message that is accepted writes back (ToJson) to JSON that reads back
// to the same message.
// fuzz-links: tessera_spec
#include <cstdint>
#include <string>

#include "fuzz/fuzz_support.h"
#include "spec/document.h"
#include "spec/protocol.h"

namespace {

using tessera::Result;
using Json = nlohmann::json;

// Reads `doc` as a T, and checks that what it reads survives the round trip.
template <typename T>
void RoundTrip(const Json& doc, Result<T> (*from_json)(const Json&)) {
  auto message = from_json(doc);
  if (!message) {
    FUZZ_CHECK(!message.error().message.empty(), "a refusal without a reason");
    return;
  }
  const Json written = tessera::ToJson(*message);
  auto again = from_json(written);
  FUZZ_CHECK(again.has_value(), "its own JSON is refused: " + again.error().message + "\n" +
                                    tessera::DumpJson(written));
  FUZZ_CHECK(tessera::ToJson(*again) == written,
             "the message reads back differently: " + tessera::DumpJson(written));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  auto doc = tessera::ParseJson(tessera::fuzz::Text(data + 1, size - 1));
  if (!doc) {
    FUZZ_CHECK(!doc.error().message.empty(), "a refusal without a reason");
    return 0;
  }
  switch (data[0] % 8) {
    case 0:
      RoundTrip(*doc, tessera::NodeRegistrationFromJson);
      break;
    case 1:
      RoundTrip(*doc, tessera::RegistrationReplyFromJson);
      break;
    case 2:
      RoundTrip(*doc, tessera::TaskLaunchFromJson);
      break;
    case 3:
      RoundTrip(*doc, tessera::TaskReportFromJson);
      break;
    case 4:
      RoundTrip(*doc, tessera::HeartbeatRequestFromJson);
      break;
    case 5:
      RoundTrip(*doc, tessera::HeartbeatReplyFromJson);
      break;
    case 6:
      RoundTrip(*doc, tessera::NodesHeartbeatRequestFromJson);
      break;
    default:
      RoundTrip(*doc, tessera::NodesHeartbeatReplyFromJson);
      break;
  }
  return 0;
}
