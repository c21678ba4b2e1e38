// Tests of the progress line (cli/progress.hpp) with a fake terminal flag and a fake clock.
#include "cli/progress.hpp"

#include <catch2/catch.hpp>
#include <sstream>
#include <string>

using ppsim::cli::ProgressReporter;

namespace {

// A clock the test sets by hand.
struct FakeClock {
  double now{100};
  ProgressReporter::Clock clock() {
    return [this] { return now; };
  }
};

} // namespace

TEST_CASE("the progress line waits a second, then shows counts and the time", "[cli][progress]") {
  FakeClock t;
  std::ostringstream err;
  ProgressReporter p(err, true, t.clock());
  p.start("sweep");
  t.now += 0.5;
  p.step("points", 3, 40);
  CHECK(err.str().empty());  // under a second: quick commands never see a line
  CHECK_FALSE(p.drawn());
  t.now += 0.7;
  p.step("points", 12, 40);
  CHECK(err.str() == "\rppsim: sweep: 12/40 points, 1.2 s");
  // Redraws no more often than kInterval.
  t.now += 0.1;
  p.step("points", 13, 40);
  CHECK(err.str() == "\rppsim: sweep: 12/40 points, 1.2 s");
  t.now += 0.2;
  p.step("points", 14, 40);
  CHECK(err.str() == "\rppsim: sweep: 12/40 points, 1.2 s\rppsim: sweep: 14/40 points, 1.5 s");
  // finish clears the line (spaces over it, back to its start), once.
  err.str("");
  const std::string cleared =
      "\r" + std::string(std::string("ppsim: sweep: 14/40 points, 1.5 s").size(), ' ') + "\r";
  p.finish();
  CHECK(err.str() == cleared);
  p.finish();
  CHECK(err.str() == cleared);
  p.step("points", 15, 40);  // after finish: nothing
  CHECK(err.str() == cleared);
}

TEST_CASE("without counts the line shows the elapsed time; a shorter line covers the longer",
          "[cli][progress]") {
  FakeClock t;
  std::ostringstream err;
  ProgressReporter p(err, true, t.clock());
  p.start("calibrate");
  t.now += 2;
  p.step("stage sizes timed", 1, 2);
  t.now += 10;
  p.tick();  // what the ticker does: the same counts, a new time
  CHECK(err.str() == "\rppsim: calibrate: 1/2 stage sizes timed, 2.0 s"
                     "\rppsim: calibrate: 1/2 stage sizes timed, 12.0 s");
  err.str("");
  ProgressReporter q(err, true, t.clock());
  q.start("simulate");
  t.now += 3;
  q.tick();
  CHECK(err.str() == "\rppsim: simulate: 3.0 s");
}

TEST_CASE("the progress line stays silent when stderr is not a terminal", "[cli][progress]") {
  FakeClock t;
  std::ostringstream err;
  ProgressReporter p(err, false, t.clock());
  p.start("plan", true);  // not even a ticker starts
  t.now += 60;
  p.step("candidates", 5, 10);
  p.tick();
  p.finish();
  CHECK(err.str().empty());
  CHECK_FALSE(p.drawn());
}

TEST_CASE("a quick command on a terminal leaves nothing behind", "[cli][progress]") {
  FakeClock t;
  std::ostringstream err;
  ProgressReporter p(err, true, t.clock());
  p.start("compare");
  t.now += 0.9;
  p.step("schedules", 1, 2);
  p.finish();
  CHECK(err.str().empty());
}
