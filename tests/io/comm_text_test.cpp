// --comm-mode, --link contention= and --sync as text: each name back to its value, anything
// else named (as an excerpt) with the valid ones.
#include "ppsim/io/comm_text.hpp"

#include "ppsim/sim/errors.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace ppsim;

TEST_CASE("communication and synchronisation modes parse from their names, others are named",
          "[io][comm]") {
  for (const CommMode m : {CommMode::Async, CommMode::Blocking})
    CHECK(parse_comm_mode(comm_mode_name(m)) == m);
  for (const Contention c : {Contention::None, Contention::Duplex})
    CHECK(parse_contention(contention_name(c)) == c);
  for (const SyncMode s : {SyncMode::AllReduce, SyncMode::PostValidation})
    CHECK(parse_sync(sync_name(s)) == s);
  CHECK_THROWS_WITH(parse_comm_mode("sync"),
                    "--comm-mode 'sync': unknown mode (valid: async, blocking)");
  CHECK_THROWS_WITH(parse_contention("half"),
                    "--link contention='half': unknown model (valid: none, duplex)");
  CHECK_THROWS_WITH(parse_sync("ring"),
                    "--sync 'ring': unknown mode (valid: allreduce, post-validation)");
  // Names are exact: no case folding, no surrounding space.
  CHECK_THROWS_AS(parse_comm_mode("Async"), ConfigError);
  CHECK_THROWS_AS(parse_sync(" allreduce"), ConfigError);
  // A long value is quoted as an excerpt, not whole.
  const std::string huge(100'000, 'x');
  for (const auto parse : {+[](std::string_view t) { (void)parse_comm_mode(t); },
                           +[](std::string_view t) { (void)parse_contention(t); },
                           +[](std::string_view t) { (void)parse_sync(t); }}) {
    try {
      parse(huge);
      FAIL("accepted");
    } catch (const ConfigError& e) {
      CHECK(std::string(e.what()).size() < 400);
    }
  }
}
