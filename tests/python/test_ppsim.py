"""Tests of the ppsim Python module: known answers, plain data, exceptions, timelines, the GIL."""
import json
import os
import subprocess
import threading
import time

import pytest

import ppsim

TOY = {"F": 2, "B": 2, "W": 2}


def test_known_answers_of_the_toy_case():
    costs = {name: ppsim.simulate(name, p=4, m=8, costs=TOY)["cost_ms"]
             for name in ("1f1b", "zb-h1", "zb-h2")}
    assert costs == {"1f1b": 66, "zb-h1": 54, "zb-h2": 48}


def test_simulate_returns_the_metrics_document_of_the_cli():
    got = ppsim.simulate("zb-h1", p=4, m=8, costs="F=1,B=1.5,W=0.5,comm=0.1")
    cli = subprocess.run([os.environ["PPSIM"], "simulate", "-s", "zb-h1", "-p", "4", "-m", "8",
                          "--costs", "F=1,B=1.5,W=0.5,comm=0.1", "--json"],
                         check=True, capture_output=True, text=True)
    assert got == json.loads(cli.stdout)
    assert got["schema"] == "ppsim.metrics/1"
    assert isinstance(got["per_device"], list) and isinstance(got["per_device"][0], dict)


def test_offload_as_on_the_command_line():
    costs = {"F": 1, "B": 1, "W": 1, "copy": 0.5}
    got = ppsim.simulate("1f1b", p=4, m=8, costs=costs, offload="stages=0")
    cli = subprocess.run([os.environ["PPSIM"], "simulate", "-s", "1f1b", "-p", "4", "-m", "8",
                          "--costs", "F=1,B=1,W=1,copy=0.5", "--offload", "stages=0", "--json"],
                         check=True, capture_output=True, text=True)
    assert got == json.loads(cli.stdout)
    assert got["per_device"][0]["peak_memory"] == 2
    assert ppsim.simulate("1f1b", p=4, m=8, costs=costs, offload=1)["peak_memory"] == 2
    assert "offload" not in ppsim.simulate("1f1b", p=4, m=8, costs=costs)
    with pytest.raises(ppsim.ConfigError, match="outside"):
        ppsim.simulate("1f1b", p=4, m=8, costs=costs, offload=2)


def test_compare_takes_a_list_or_a_comma_text():
    a = ppsim.compare(["1f1b", "zb-h1"], p=4, m=8, costs=TOY)
    b = ppsim.compare("1f1b,zb-h1", p=4, m=8, costs=TOY)
    assert [r["schedule"] for r in a] == ["1f1b", "zb-h1"]
    assert a == b


def test_compare_refuses_wrong_types_and_empty_lists():
    # Issue 22: these raised RuntimeError, or returned [] for no schedule at all.
    for wrong in (None, [1, 2], {"1f1b": 1}, [["1f1b"]], (n for n in ["1f1b"]), 7):
        with pytest.raises(TypeError, match="schedules: expected"):
            ppsim.compare(wrong, p=4, m=8)
    for empty in ([], (), "", "1f1b,,zb-h1", [""]):
        with pytest.raises(ppsim.ConfigError, match="schedules: "):
            ppsim.compare(empty, p=4, m=8)
    assert [r["schedule"] for r in ppsim.compare(("1f1b",), p=4, m=8)] == ["1f1b"]


def test_errors_are_python_exceptions_with_the_cli_messages():
    assert issubclass(ppsim.ConfigError, ppsim.Error)
    assert issubclass(ppsim.Error, ValueError)
    with pytest.raises(ppsim.ConfigError, match="zb-h2: needs microbatches >= 2\\*devices"):
        ppsim.simulate("zb-h2", p=4, m=5)
    with pytest.raises(ppsim.ConfigError, match="unknown schedule 'nope'"):
        ppsim.simulate("nope", p=4, m=8)
    with pytest.raises(ppsim.InfeasibleError, match="above --mem-limit"):
        ppsim.simulate("zb-h2", p=4, m=8, mem_limit="1p")
    with pytest.raises(ppsim.ConfigError, match="unknown key 'Q'"):
        ppsim.simulate("1f1b", p=4, m=8, costs={"Q": 1})
    deadlock = os.path.join(os.environ["PPSIM_SOURCE_DIR"], "data/examples/schedules/deadlock.csv")
    with pytest.raises(ppsim.ScheduleError, match="deadlock"):
        ppsim.simulate(deadlock)


def test_the_timeline_matches_the_chrome_trace(tmp_path):
    trace = tmp_path / "t.json"
    rows = ppsim.timeline("zb-h1", p=4, m=8, costs="F=1,B=1.5,W=0.5,comm=0.1")
    ppsim.simulate("zb-h1", p=4, m=8, costs="F=1,B=1.5,W=0.5,comm=0.1", trace=str(trace))
    # Task slices are on the compute track (tid 0); messages are slices on the comm track.
    events = json.loads(trace.read_text())["traceEvents"]
    slices = [e for e in events if e["ph"] == "X" and e["tid"] == 0 and e["cat"] != "summary"]
    assert any(e["ph"] == "X" and e["tid"] >= 1 and e["cat"] == "comm" for e in events)
    assert len(rows) == len(slices) == 4 * 8 * 3
    # Both list each device's tasks in execution order: pair them up one by one.
    slices.sort(key=lambda e: (e["pid"], e["ts"]))
    rows_sorted = sorted(rows, key=lambda r: (r["device"], r["start_ms"]))
    for r, e in zip(rows_sorted, slices):
        assert e["args"]["task"] == r["task"]
        assert e["args"]["microbatch"] == r["microbatch"]
        assert e["args"]["chunk"] == r["chunk"]
        assert e["ts"] == pytest.approx(r["start_ms"] * 1000, abs=1e-6)
        assert e["dur"] == pytest.approx((r["end_ms"] - r["start_ms"]) * 1000, abs=1e-6)


def test_schedule_gives_pytorch_actions_and_load_reads_files_back(tmp_path):
    rows = ppsim.schedule("1f1b", p=4, m=8)
    assert rows[3][:4] == ["3F0", "3B0", "3F1", "3B1"]  # PyTorch's B is our fused BW
    zb = ppsim.schedule("zb-h1", p=2, m=2)
    assert zb[1] == ["1F0", "1I0", "1F1", "1I1", "1W0", "1W1"]
    csv = tmp_path / "zb.csv"
    csv.write_text("\n".join(",".join(r) for r in zb) + "\n")
    loaded = ppsim.load(str(csv))
    assert loaded["actions"] == zb
    assert loaded["devices"] == 2 and loaded["microbatches"] == 2


def test_schedules_lists_the_registry():
    names = [s["name"] for s in ppsim.schedules()]
    assert names[:2] == ["gpipe", "1f1b"]
    assert "zb-v" in names
    assert all({"name", "aliases", "constraint", "description", "reference", "pytorch_class"}
               <= set(s) for s in ppsim.schedules())
    by_name = {s["name"]: s for s in ppsim.schedules()}
    assert by_name["1f1b"]["pytorch_class"] == "Schedule1F1B"


def test_long_work_releases_the_gil():
    # While one thread simulates a large schedule, another keeps running Python code.
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    start = time.perf_counter()
    ppsim.simulate("zb-h1", p=64, m=4096)  # 786k tasks: tens of milliseconds at least
    elapsed = time.perf_counter() - start
    done.set()
    t.join()
    if elapsed < 0.01:
        pytest.skip("the call was too fast to observe another thread during it")
    during = [x for x in ticks if start <= x <= start + elapsed]
    # With the GIL held the ticker could not run during the call at all.
    assert len(during) >= 3


def test_a_model_and_a_limit_in_bytes_as_on_the_command_line():
    m = ppsim.simulate("zb-auto", p=4, m=8, model="zb-1.5b", device="h100", mem_limit="16GiB")
    assert m["peak_memory"] <= m["mem_limit"] + 1e-9
    assert ppsim.schedule("zb-auto", p=4, m=8, model="zb-1.5b", mem_limit="16GiB")[0][0] == "0F0"
    with pytest.raises(ppsim.ConfigError, match="--model and --device"):
        ppsim.simulate("zb-auto", p=4, m=8, mem_limit="16GiB")


def test_import_and_diff_a_simulated_trace(tmp_path):
    trace = tmp_path / "zbh1.json"
    ppsim.simulate("zb-h1", p=4, m=8, costs={"F": 2, "B": 2, "W": 2, "comm": 0.5},
                   trace=str(trace))
    fitted = tmp_path / "fitted.json"
    run = ppsim.import_trace([str(trace)], costs_out=str(fitted))
    assert run["measured"]["schema"] == "ppsim.metrics/1"
    assert run["measured"]["cost_ms"] == 60
    assert run["fit"]["comm_ms"] == 0.5
    d = ppsim.diff([str(trace)])
    assert all(v == 0 for k, v in d["errors"].items() if k.endswith("error"))
    assert set(d["idle"]["causes"]) >= {"dependency", "comm", "straggler", "warmup", "cooldown",
                                        "optimizer"}
    # What-if from the measured run: its fitted costs with another schedule.
    assert ppsim.simulate("zb-h2", p=4, m=8, costs_file=str(fitted))["cost_ms"] < 60


def test_a_cost_file_with_a_link_sizes_the_messages(tmp_path):
    costs = tmp_path / "linked.json"
    costs.write_text('{"schema": "ppsim.costs/1", "link": {"latency": 0.02, "bandwidth": 5},'
                     ' "stages": [{"F": 1, "B": 1, "W": 1, "act_bytes": 1e6, "grad_bytes": 3e6}]}')
    r = ppsim.simulate("zb-h1", p=4, m=8, costs_file=str(costs))
    assert r["comm"]["latency_ms"] == 0.02
    assert r["comm"]["bandwidth_gb_per_s"] == 5
    # 0.22 ms forward, 0.62 ms back: more than without the link
    assert r["cost_ms"] > ppsim.simulate("zb-h1", p=4, m=8, costs={"F": 1, "B": 1, "W": 1})["cost_ms"]


def test_recompute_as_on_the_command_line():
    # llama3-8b on two h100s does not fit as it is; auto recomputes per stage what it must
    with pytest.raises(ppsim.Error, match="out of memory"):
        ppsim.simulate("1f1b", p=2, m=16, model="llama3-8b", device="h100")
    r = ppsim.simulate("1f1b", p=2, m=16, model="llama3-8b", device="h100", recompute="auto")
    assert all(d["peak_bytes"] <= 80 * 2**30 for d in r["per_device"])
    assert r["per_device"][0]["recompute_ms"] > 0
    plain = ppsim.simulate("1f1b", p=2, m=4, model="zb-1.5b", recompute="none")
    assert plain == ppsim.simulate("1f1b", p=2, m=4, model="zb-1.5b")
    with pytest.raises(ppsim.ConfigError, match="recompute: needs model"):
        ppsim.simulate("1f1b", p=2, m=4, recompute="full")
    with pytest.raises(ppsim.ConfigError, match="unknown choice"):
        ppsim.simulate("1f1b", p=2, m=4, model="zb-1.5b", recompute="most")


def test_slices_as_on_the_command_line():
    # the known answers of data/baselines/known-answers.json
    assert ppsim.simulate("seq1f1b", p=4, m=8, costs=TOY, slices=2)["cost_ms"] == 57
    assert ppsim.simulate("seq-zb-h1", p=4, m=8, costs=TOY, slices=2)["cost_ms"] == 51
    assert ppsim.simulate("interleaved-seq1f1b", p=4, m=8, costs=TOY, slices=2)["cost_ms"] == 52.5
    # a model's slices, balanced, as the command line gives them
    cli = json.loads(subprocess.run(
        [os.environ.get("PPSIM", "ppsim"), "simulate", "-s", "seq1f1b", "--slices", "4",
         "--slicing", "balanced", "-p", "4", "-m", "4", "--model", "llama3-8b", "--device",
         "h100", "--json"],
        check=True, capture_output=True, text=True).stdout)
    py = ppsim.simulate("seq1f1b", p=4, m=4, model="llama3-8b", device="h100", slices=4,
                        slicing="balanced")
    assert py["cost_ms"] == cli["cost_ms"]
    assert py["peak_memory"] == cli["peak_memory"]
    assert py["cost_ms"] != ppsim.simulate("seq1f1b", p=4, m=4, model="llama3-8b", slices=4)["cost_ms"]
    rows = ppsim.timeline("seq1f1b", p=2, m=2, costs=TOY, slices=2)
    assert {(r["microbatch"], r["slice"]) for r in rows} == {(0, 0), (0, 1), (1, 0), (1, 1)}
    assert all("slice" not in r for r in ppsim.timeline("1f1b", p=2, m=2, costs=TOY))
    with pytest.raises(ppsim.ConfigError, match="are for seq1f1b, seq-zb-h1 and interleaved-seq1f1b only"):
        ppsim.simulate("1f1b", p=2, m=2, costs=TOY, slices=2)
    with pytest.raises(ppsim.ConfigError, match="--slicing"):
        ppsim.simulate("seq1f1b", p=2, m=2, costs=TOY, slices=2, slicing="lopsided")


def cli_json(*args):
    return json.loads(subprocess.run([os.environ.get("PPSIM", "ppsim"), *args, "--json"],
                                     check=True, capture_output=True, text=True).stdout)


def test_parallelism_and_overlap_as_on_the_command_line():
    # data and tensor parallelism with ZeRO-1: the same document as the flags give
    flags = ["simulate", "-s", "1f1b", "-p", "4", "-m", "8", "--model", "zb-1.5b", "--device",
             "h100"]
    assert ppsim.simulate("1f1b", p=4, m=8, model="zb-1.5b", device="h100", dp=8, tp=2,
                          zero=1, overlap_grad_reduce=True) == \
        cli_json(*flags, "--dp", "8", "--tp", "2", "--zero", "1", "--overlap-grad-reduce")
    assert ppsim.simulate("1f1b", p=4, m=8, model="zb-1.5b", tp=2, sequence_parallel=False) == \
        cli_json(*flags, "--tp", "2", "--sequence-parallel", "off")
    # a mixture of experts with expert parallelism, its all-to-alls overlapped on one stream
    moe = ["simulate", "-s", "dualpipe-v", "-p", "4", "-m", "16", "--model", "qwen3-moe-30b-a3b",
           "--device", "h100", "--ep", "16", "--dp", "16"]
    py = ppsim.simulate("dualpipe-v", p=4, m=16, model="qwen3-moe-30b-a3b", device="h100",
                        ep=16, dp=16, overlap="a2a", streams=1)
    assert py == cli_json(*moe, "--overlap", "a2a", "--streams", "1")
    assert py["per_device"][0]["exposed_comm_ms"] < py["per_device"][0]["task_comm_ms"]
    none = ppsim.simulate("dualpipe-v", p=4, m=16, model="qwen3-moe-30b-a3b", ep=16, dp=16)
    assert none == cli_json(*moe)
    assert none["iteration_time_ms"] > py["iteration_time_ms"]
    # the defaults are today's run
    assert ppsim.simulate("1f1b", p=2, m=4, model="zb-1.5b", dp=1, tp=1, zero=0, ep=1,
                          overlap="none") == ppsim.simulate("1f1b", p=2, m=4, model="zb-1.5b")


def test_bad_parallelism_and_overlap_are_config_errors():
    for kwargs, message in [({"dp": 2}, "dp: needs model"), ({"ep": 2}, "ep: needs model"),
                            ({"overlap": "a2a"}, "overlap: needs model"),
                            ({"streams": 1}, "streams: needs model")]:
        with pytest.raises(ppsim.ConfigError, match=message):
            ppsim.simulate("1f1b", p=2, m=4, costs=TOY, **kwargs)
    model = {"model": "qwen3-moe-30b-a3b", "device": "h100"}
    for kwargs, message in [({"overlap": "some"}, "expected none, a2a or full"),
                            ({"overlap": "a2a", "streams": 0}, "streams 0: expected 1..64"),
                            ({"streams": 2}, "streams: needs overlap"),
                            ({"ep": 3, "dp": 3}, "does not divide the 128 experts"),
                            ({"ep": 16}, "an expert-parallel group is drawn"),
                            ({"dp": 2**21}, "expected 1..1048576"),
                            ({"zero": 2}, "ppsim models stages 0 and 1")]:
        with pytest.raises(ppsim.ConfigError, match=message):
            ppsim.simulate("1f1b", p=4, m=8, **model, **kwargs)


def test_schedule_with_overlap_is_the_combined_order_export_writes(tmp_path):
    path = tmp_path / "combined.csv"
    subprocess.run([os.environ.get("PPSIM", "ppsim"), "export", "-s", "1f1b", "-p", "2", "-m", "3",
                    "--model", "zb-1.5b", "--overlap", "a2a", "--format", "pytorch-csv", "-o",
                    str(path)], check=True, capture_output=True)
    rows = [[c for c in line.split(",") if c] for line in path.read_text().splitlines()]
    combined = ppsim.schedule("1f1b", p=2, m=3, model="zb-1.5b", overlap="a2a")
    assert combined == rows
    assert combined[1] == ["1F0", "(1F1;1B0)OVERLAP_F_B", "(1F2;1B1)OVERLAP_F_B", "1B2"]
    assert ppsim.schedule("1f1b", p=2, m=3, model="zb-1.5b")[1] == \
        ["1F0", "1B0", "1F1", "1B1", "1F2", "1B2"]
    with pytest.raises(ppsim.ConfigError, match="overlap: needs model"):
        ppsim.schedule("1f1b", p=2, m=3, overlap="a2a")


def test_costs_and_validate_model_are_the_documents_of_the_cli():
    # a model's costs with where each stage's time goes, as `ppsim costs --json`
    got = ppsim.costs("llama3-8b", p=4, device="h100", tp=2, dp=2, recompute="selective")
    assert got == cli_json("costs", "-p", "4", "--model", "llama3-8b", "--device", "h100",
                           "--tp", "2", "--dp", "2", "--recompute", "selective")
    assert got["schema"] == "ppsim.costs/1" and len(got["stages"]) == 4
    parts = got["model"]["breakdown"][1]["F"]
    assert parts["gemm_ms"] > 0 and parts["tp_comm_ms"] > 0
    assert ppsim.costs("zb-1.5b", p=2, v=2, costs={"comm": 0.5}) == \
        cli_json("costs", "-p", "2", "-v", "2", "--model", "zb-1.5b", "--costs", "comm=0.5")
    # the published runs predicted, as `ppsim validate-model --json`
    v = ppsim.validate_model()
    assert v == cli_json("validate-model")
    assert v["schema"] == "ppsim.validation/1"
    assert {r["use"] for r in v["rows"]} == {"fit", "check"}
    assert ppsim.validate_model(device="h100") == cli_json("validate-model", "--device", "h100")


def test_bad_costs_and_validate_model_inputs_are_config_errors(tmp_path):
    for kwargs, message in [({"p": 10**9}, r"devices=1000000000 \(expected 1..4096\)"),
                            ({"p": 0}, "devices=0"),
                            ({"p": 4, "v": -1}, "chunks=-1"),
                            ({"p": 4, "recompute": "auto"}, "'auto' depends on the schedule"),
                            ({"p": 4, "device": "tpu"}, "tpu"),
                            ({"p": 4, "ep": 2}, "has no experts")]:
        with pytest.raises(ppsim.ConfigError, match=message):
            ppsim.costs("zb-1.5b", **kwargs)
    with pytest.raises(ppsim.ConfigError, match="zb-99b"):
        ppsim.costs("zb-99b", p=4)
    bad = tmp_path / "runs.json"
    bad.write_text('{"schema": "ppsim.published/1", "runs": 3}')
    with pytest.raises(ppsim.ConfigError, match="runs.json"):
        ppsim.validate_model(str(bad))
    with pytest.raises(ppsim.ConfigError, match="tpu"):
        ppsim.validate_model(device="tpu")
