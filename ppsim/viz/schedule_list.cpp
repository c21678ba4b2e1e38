// ppsim list's table and document.
#include "ppsim/viz/schedule_list.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ppsim {

void write_schedule_list(std::ostream& out, std::span<const ScheduleInfo> schedules) {
  for (const ScheduleInfo& s : schedules) {
    std::string name(s.name);
    for (auto a : s.aliases) name += fmt::format(" ({})", a);
    std::string pytorch(s.pytorch_class.empty() ? "-" : s.pytorch_class);
    if (!s.pytorch_note.empty()) pytorch += fmt::format(" ({})", s.pytorch_note);
    out << fmt::format("{}\n    {}\n    constraint: {}\n    reference: {}\n    pytorch: {}\n", name,
                       s.description, s.constraint, s.reference, pytorch);
  }
  out << "\nA schedule file (*.csv in PyTorch's format, *.json in ppsim's) is accepted "
         "wherever a name is.\n"
         "pytorch: the torch.distributed.pipelining class of the same schedule (the same "
         "order, token for\ntoken, unless the note says how they differ); - = none: "
         "ppsim's own or searched.\n";
}

std::string schedule_list_json(std::span<const ScheduleInfo> schedules) {
  using ojson = nlohmann::ordered_json;
  // null: no torch.distributed.pipelining class runs this schedule / nothing to add
  const auto or_null = [](std::string_view text) { return text.empty() ? ojson() : ojson(text); };
  ojson all = ojson::array();
  for (const ScheduleInfo& s : schedules) {
    ojson e;
    e["name"] = s.name;
    e["aliases"] = s.aliases;
    e["constraint"] = s.constraint;
    e["description"] = s.description;
    e["reference"] = s.reference;
    e["pytorch_class"] = or_null(s.pytorch_class);
    e["pytorch_note"] = or_null(s.pytorch_note);
    all.push_back(std::move(e));
  }
  return all.dump(2);
}

} // namespace ppsim
