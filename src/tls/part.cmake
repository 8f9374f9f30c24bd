# tessera_tls: the OpenSSL helpers that the controller's front end and the agent's endpoint
# share (OpenSSL's error text, a serving context's certificate and key). It depends on OpenSSL
# only, no other part, so both the controller and the agent may use it (docs/architecture.md).
find_package(OpenSSL REQUIRED)
tessera_part(tls DEPS OpenSSL::SSL OpenSSL::Crypto)
