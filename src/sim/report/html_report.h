// The HTML report of one `tessera sim` run: a single self-contained page (Chart.js and the data
// inlined, no network fetches) with the run's header, a results table per policy and the charts
// that fit the experiment. docs/report.md explains what each chart shows and how to read it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace tessera {

// Renders the report of one `tessera sim` run. `summary` is the run's summary.json document
// extended with per-policy time series (shape in docs/report.md). Never throws; missing optional
// fields simply leave their chart out.
std::string RenderHtmlReport(const nlohmann::json& summary);

}  // namespace tessera
