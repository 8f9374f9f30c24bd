# tessera_spec: job specs (YAML/JSON parsing and validation) and the controller<->agent wire
# types. Depends on core only, plus the YAML and JSON libraries.
tessera_part(spec DEPS tessera_core yaml-cpp nlohmann_json::nlohmann_json)
