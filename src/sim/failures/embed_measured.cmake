# Writes IN (the JSON `tessera bench recovery --write-preset` wrote) into OUT as the C++ constant
# tessera::sim_assets::kMeasuredRecoveryTimesJson, for `--recovery-times measured`.
file(READ ${IN} content)
string(FIND "${content}" ")tsr\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${IN} contains the raw-string delimiter )tsr\"")
endif()
file(WRITE ${OUT} "// Generated from ${IN}; do not edit.\n#pragma once\nnamespace tessera::sim_assets {\ninline constexpr const char* kMeasuredRecoveryTimesJson = R\"tsr(${content})tsr\";\n}  // namespace tessera::sim_assets\n")
