// The document of check --json.
#include "ppsim/viz/check.hpp"

#include <nlohmann/json.hpp>

namespace ppsim {

namespace {

using ojson = nlohmann::ordered_json;

const char* change_text(const MetricCheck& m) {
  if (!m.expected) return "new";
  switch (m.change) {
    case Change::same: return "same";
    case Change::worse: return "worse";
    case Change::better: return "better";
  }
  return "same";
}

} // namespace

std::string check_json(const CheckResult& result, std::string_view baseline, bool updated) {
  ojson doc;
  doc["schema"] = "ppsim.check/1";
  doc["baseline"] = baseline;
  doc["tolerance"] = result.tolerance;
  ojson cases = ojson::array();
  for (const CaseCheck& c : result.cases) {
    ojson cj;
    cj["name"] = c.name;
    ojson metrics = ojson::array();
    for (const MetricCheck& m : c.metrics) {
      ojson mj;
      mj["metric"] = m.metric;
      mj["expected"] = m.expected ? ojson(*m.expected) : ojson();
      mj["got"] = m.got;
      mj["change"] = change_text(m);
      metrics.push_back(std::move(mj));
    }
    cj["metrics"] = std::move(metrics);
    cases.push_back(std::move(cj));
  }
  doc["cases"] = std::move(cases);
  const ChangeCount n = count_changes(result);
  doc["regressions"] = n.worse;
  doc["improvements"] = n.better;
  doc["updated"] = updated;
  return doc.dump(2);
}

} // namespace ppsim
