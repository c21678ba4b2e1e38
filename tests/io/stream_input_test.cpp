// Issue 22 in the readers: FIFOs and devices never block a read or a write, a JSON object names
// each key once, and a name inside a file is bounded.
#include "ppsim/io/atomic_file.hpp"
#include "ppsim/io/baseline_file.hpp"
#include "ppsim/io/cost_file.hpp"
#include "ppsim/io/device_file.hpp"
#include "ppsim/io/model_file.hpp"
#include "ppsim/io/schedule_file.hpp"
#include "ppsim/io/text_file.hpp"
#include "ppsim/sim/errors.hpp"
#include "ppsim/sim/limits.hpp"
#include "tests/cli/cli_harness.hpp"

#include "tests/test_helpers.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <fcntl.h>
#include <functional>
#include <future>
#include <vector>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace ppsim;
using namespace ppsim::test;
using Catch::Contains;

namespace {


double seconds_of(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

TEST_CASE("a FIFO that nothing writes is an error after the wait, not a hang", "[io][robust]") {
  TempDir dir("stream");
  const std::string fifo = dir / "f.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string message;
  const double took = seconds_of([&] {
    message = error_of([&] { (void)read_text_file(fifo, "cost file", limits::kMaxInputBytes, 200); });
  });
  CHECK_THAT(message, Contains("f.json: the cost file (a FIFO or device) did not end within 0.2 s"));
  CHECK(took < 3);
}

TEST_CASE("a FIFO with a writer is read to its end", "[io][robust]") {
  TempDir dir("stream");
  const std::string fifo = dir / "f.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // The writer comes late and writes in two parts: the reader waits for both and the close.
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    if (fd < 0) return;
    (void)!::write(fd, "{\"schema\": ", 11);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    (void)!::write(fd, "\"x\"}", 4);
    ::close(fd);
  });
  const std::string text = read_text_file(fifo, "cost file", limits::kMaxInputBytes, 3000);
  writer.join();
  CHECK(text == "{\"schema\": \"x\"}");
}

TEST_CASE("every file reader goes through the non-blocking open", "[io][robust]") {
  TempDir dir("stream");
  const std::string fifo = dir / "f.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string csv = dir / "f.csv";
  REQUIRE(::mkfifo(csv.c_str(), 0600) == 0);
  // Each waits the limit (5 s) at most, where each used to hang; all at once, to wait once.
  std::vector<std::function<void()>> loads = {
      [&] { (void)load_cost_file(fifo); },
      [&] { (void)load_schedule_file(csv); },
      [&] { (void)load_schedule_file(fifo); },
      [&] { (void)load_baseline_file(fifo, true); },
      [&] { (void)load_model(fifo); },
      [&] { (void)load_device(fifo); },
  };
  std::vector<std::future<std::string>> messages;
  for (const auto& load : loads) messages.push_back(std::async(std::launch::async, error_of<Error, const std::function<void()>&>, load));
  for (auto& m : messages) CHECK_THAT(m.get(), Contains("did not end within 5 s"));
}

TEST_CASE("output to a FIFO without a reader fails at once", "[io][robust]") {
  TempDir dir("stream");
  const std::string fifo = dir / "out.json";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string message;
  const double took = seconds_of([&] {
    message = error_of([&] { write_file_atomically(fifo, [](std::ostream& f) { f << "{}"; }); });
  });
  CHECK_THAT(message, Contains("out.json: cannot write (a FIFO that nothing reads)"));
  CHECK(took < 1);
  // A reader that never reads: the write stops after the wait instead of blocking for ever.
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(reader >= 0);
  const std::string big(1 << 20, 'x');  // more than the pipe holds
  message = error_of([&] { write_file_atomically(fifo, [&](std::ostream& f) { f << big; }); });
  ::close(reader);
  CHECK_THAT(message, Contains("out.json: cannot write (the reader took nothing for 5 s)"));
}

TEST_CASE("a block device is neither read nor written", "[io][robust]") {
  // Any block device of this machine will do; without one there is nothing to check.
  for (const char* dev : {"/dev/loop0", "/dev/sda", "/dev/vda", "/dev/nvme0n1"}) {
    struct stat st {};
    if (::stat(dev, &st) != 0 || !S_ISBLK(st.st_mode)) continue;
    CHECK_THAT(error_of([&] { check_output_path(dev, "--trace"); }), Contains("is a block device"));
    const std::string read = error_of([&] { (void)read_text_file(dev, "cost file"); });
    CHECK((read.find("not a regular file, a FIFO or a character device") != std::string::npos ||
           read.find("cannot open") != std::string::npos));
    break;
  }
}

TEST_CASE("a key given twice in any JSON file is refused with the key and its line",
          "[io][robust]") {
  const std::string costs = "{\"schema\": \"x\",\n \"schema\": \"ppsim.costs/1\", \"F\": 1}";
  CHECK_THAT(error_of([&] { (void)parse_cost_json(costs, "c.json"); }),
             Contains("c.json: line 2, column 2: duplicate key \"schema\""));
  // Nested objects count their own keys; the same key in two objects is fine.
  const std::string nested = R"({"schema": "ppsim.costs/1", "stages": [{"F": 1, "B": 1, "W": 1},
{"F": 1, "B": 1, "W": 1, "B": 2}]})";
  CHECK_THAT(error_of([&] { (void)parse_cost_json(nested, "c.json"); }),
             Contains("c.json: line 2, column 26: duplicate key \"B\""));
  // A key spelled with an escape is the same key.
  CHECK_THAT(error_of([&] { (void)parse_cost_json(R"({"F": 1, "\u0046": 2})", "c.json"); }),
             Contains("duplicate key \"F\""));
  // Every reader: schedules, baselines, models, devices.
  CHECK_THAT(error_of([&] {
               (void)parse_schedule_json(R"({"schema": "ppsim.schedule/1", "devices": 1, "devices": 2})",
                                         "s.json");
             }),
             Contains("s.json: line 1, column 46: duplicate key \"devices\""));
  CHECK_THAT(error_of([&] {
               (void)parse_baseline_json(R"({"schema": "ppsim.baseline/1", "cases": [], "cases": []})",
                                         "b.json", false);
             }),
             Contains("duplicate key \"cases\""));
  CHECK_THAT(error_of([&] { (void)parse_model_json(R"({"layers": 1, "layers": 2})", "m.json"); }),
             Contains("duplicate key \"layers\""));
  CHECK_THAT(error_of([&] {
               (void)parse_device_json(R"({"peak_tflops": 1, "peak_tflops": 2})", "d.json");
             }),
             Contains("duplicate key \"peak_tflops\""));
  // A key inside a string value is no key.
  CHECK_THAT(error_of([&] { (void)parse_cost_json(R"({"schema": "F: F:"})", "c.json"); }),
             !Contains("duplicate"));
}

TEST_CASE("a name inside a file is bounded and quoted by an excerpt", "[io][robust]") {
  const std::string name(100000, 'n');
  const std::string doc = R"({"schema": "ppsim.schedule/1", "name": ")" + name + R"(", "devices": 1})";
  const std::string message = error_of([&] { (void)parse_schedule_json(doc, "s.json"); });
  CHECK_THAT(message, Contains("s.json: /name: 'nnnn") && Contains("(100000 bytes)") &&
                          Contains("a name has at most 256 characters"));
  CHECK(message.size() < 400);
  const std::string model = R"({"name": ")" + name + R"("})";
  CHECK(error_of([&] { (void)parse_model_json(model, "m.json"); }).size() < 400);
}

TEST_CASE("a baseline case's name made of its fields is bounded like a written one",
          "[io][robust]") {
  // The writer writes every case's name; one made of a long costs string would not read back.
  const auto doc = [](std::size_t costs_chars) {
    return R"({"schema": "ppsim.baseline/1", "cases": [{"schedule": "1f1b", "p": 2, "m": 2, "costs": ")" +
           std::string(costs_chars, 'x') + R"("}]})";
  };
  CHECK_THAT(error_of([&] { (void)parse_baseline_json(doc(300), "b.json", false); }),
             Contains("b.json: /cases/0/name: missing, and the name made of the case's fields has "
                      "319 characters (a name has at most 256): give the case a name"));
  const Baseline short_costs = parse_baseline_json(doc(10), "b.json", false);
  CHECK(short_costs.cases[0].name == "1f1b p=2 m=2 costs=xxxxxxxxxx");
  const Baseline back = parse_baseline_json(baseline_json(short_costs), "b.json", false);
  CHECK(back.cases[0].name == short_costs.cases[0].name);
}

TEST_CASE("a device file's link and memory are positive", "[io][robust]") {
  const auto device = [](const std::string& extra) {
    return error_of([&] {
      (void)parse_device_json(R"({"schema": "ppsim.device/1", "peak_tflops": 100)" + extra + "}",
                              "d.json");
    });
  };
  CHECK_THAT(device(R"(, "link": {"gbytes_per_s": 0})"),
             Contains("d.json: /link/gbytes_per_s: 0: expected a positive GB/s"));
  CHECK_THAT(device(R"(, "memory_gib": 0)"),
             Contains("d.json: /memory_gib: 0: expected a positive GiB"));
  CHECK(device(R"(, "memory_gib": 80, "link": {"gbytes_per_s": 50, "latency_ms": 0})") ==
        "(no error)");
}
