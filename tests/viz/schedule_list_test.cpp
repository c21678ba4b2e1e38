// Tests of ppsim list's table and document.
#include "ppsim/viz/schedule_list.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>
#include <string>

using namespace ppsim;

TEST_CASE("the schedule list names every schedule of the registry, in its order, with null "
          "where PyTorch has no class",
          "[viz][list]") {
  const auto registry = schedule_registry();
  const auto doc = nlohmann::json::parse(schedule_list_json(registry));
  REQUIRE(doc.size() == registry.size());
  std::ostringstream table;
  write_schedule_list(table, registry);
  bool some_null = false, some_class = false;
  for (std::size_t i = 0; i < registry.size(); ++i) {
    const ScheduleInfo& s = registry[i];
    const auto& e = doc[i];
    CHECK(e["name"] == s.name);
    CHECK(e["aliases"].size() == s.aliases.size());
    CHECK(e["constraint"] == s.constraint);
    CHECK(e["reference"] == s.reference);
    CHECK(e["pytorch_class"].is_null() == s.pytorch_class.empty());
    CHECK(e["pytorch_note"].is_null() == s.pytorch_note.empty());
    some_null = some_null || s.pytorch_class.empty();
    some_class = some_class || !s.pytorch_class.empty();
    // the table: the name line, then the description indented
    CHECK(table.str().find(std::string(s.name)) != std::string::npos);
    CHECK(table.str().find("    " + std::string(s.description) + "\n") != std::string::npos);
  }
  CHECK(some_null);   // ppsim's own schedules (the searches)
  CHECK(some_class);  // PyTorch's
  const auto one_f = std::find_if(doc.begin(), doc.end(), [](const auto& e) { return e["name"] == "1f1b"; });
  REQUIRE(one_f != doc.end());
  CHECK((*one_f)["pytorch_class"] == "Schedule1F1B");
  const auto automatic = std::find_if(doc.begin(), doc.end(), [](const auto& e) { return e["name"] == "zb-auto"; });
  REQUIRE(automatic != doc.end());
  CHECK((*automatic)["pytorch_class"].is_null());
  CHECK(table.str().find("    pytorch: -\n") != std::string::npos);
}
