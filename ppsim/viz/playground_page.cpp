// The playground page: controls, status, drawing area, and the inline scripts.
#include "ppsim/viz/playground_page.hpp"

#include "ppsim/viz/html_report.hpp"
#include "ppsim/viz/page_assets.hpp"

#include <ostream>
#include <string>

namespace ppsim {

void write_playground_page(std::ostream& out, std::string_view config) {
  write_html_head(out, "ppsim playground");
  std::string safe;
  for (const char c : config) {
    if (c == '<') safe += "\\u003c";
    else safe += c;
  }
  out << "<p class=\"sub\">Every change simulates again and redraws. The address bar holds the "
         "parameters (the command line's option names), so a view can be shared; the same query "
         "on <a id=\"api-link\" href=\"/api/compare\">/api/compare</a> returns "
         "<code>ppsim compare --json</code>.</p>\n"
         "<form class=\"controls\" id=\"controls\" autocomplete=\"off\"></form>\n"
         "<div id=\"status\" role=\"status\"></div>\n<div id=\"ppsim-root\"></div>\n"
         "<script type=\"application/json\" id=\"ppsim-config\">"
      << safe << "</script>\n<script>\n"
      << report_script() << "</script>\n<script>\n"
      << playground_script() << "</script>\n";
  write_html_tail(out);
}

} // namespace ppsim
