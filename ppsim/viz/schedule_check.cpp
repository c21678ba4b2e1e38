// The documents of validate --json and export --json.
#include "ppsim/viz/schedule_check.hpp"

#include <nlohmann/json.hpp>

namespace ppsim {

namespace {

using ojson = nlohmann::ordered_json;

// The schedule's shape, the keys both documents share after their own.
void add_shape(ojson& doc, const Schedule& s) {
  doc["devices"] = s.devices;
  doc["stages"] = s.stages();
  doc["microbatches"] = s.microbatches;
  doc["tasks"] = s.task_count();
}

} // namespace

std::string validate_json(const Schedule& s, std::string_view file, const Violations& violations,
                          std::string_view error) {
  ojson doc;
  doc["schema"] = "ppsim.validate/1";
  doc["file"] = file;
  add_shape(doc, s);
  // the first problems described (limits::kMaxReportedProblems), all of them counted
  ojson list = ojson::array();
  for (const Violation& found : violations) {
    ojson v;
    v["device"] = found.at.device;
    if (found.at.index >= 0)
      v["index"] = found.at.index;
    v["what"] = found.what;
    list.push_back(std::move(v));
  }
  doc["valid"] = error.empty();
  doc["violations"] = std::move(list);
  doc["violations_total"] = violations.total;
  if (!error.empty())
    doc["error"] = error;
  return doc.dump(2);
}

std::string export_json(const Schedule& s, std::string_view file, std::string_view format) {
  ojson doc;
  doc["schema"] = "ppsim.export/1";
  doc["file"] = file;
  doc["schedule"] = s.name;
  doc["format"] = format;
  add_shape(doc, s);
  return doc.dump(2);
}

} // namespace ppsim
