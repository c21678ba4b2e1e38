#!/usr/bin/env python3
"""Writes a synthetic PyTorch-profiler (Kineto) trace of one rank, of about SIZE_MB megabytes,
for measuring `ppsim import` on traces as large as real ones (0.1 to 1 GB):

    python3 bench/make_kineto_trace.py 1024 /tmp/rank0.json     # ~1 GB
    /usr/bin/time -v build/release/ppsim import /tmp/rank0.json  # time and peak memory

The trace is one rank of a 1F1B over `--stages` stages with PP:<action> ranges, each with the
profiler noise a real trace has around it: CPU ops, CUDA runtime calls, kernels, flows.
"""
import argparse
import sys

ap = argparse.ArgumentParser()
ap.add_argument("size_mb", type=int)
ap.add_argument("out")
ap.add_argument("--stages", type=int, default=1)
args = ap.parse_args()

target = args.size_mb * 1_000_000
with open(args.out, "w") as f:
    f.write('{"schemaVersion":1,"distributedInfo":{"backend":"nccl","rank":0,"world_size":1},'
            '"traceEvents":[\n')
    written, ts, mb = 0, 1000.0, 0
    first = True
    while written < target:
        for kind, dur in (("F", 900.0), ("B", 1800.0)):
            events = [f'{{"ph":"X","cat":"user_annotation","name":"PP:0{kind}{mb}","pid":11,'
                      f'"tid":11,"ts":{ts:.3f},"dur":{dur:.3f},"args":{{"External id":{mb}}}}}']
            t = ts + 1
            for k in range(60):  # ops, launches and kernels inside the action
                events.append(f'{{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":11,"tid":11,'
                              f'"ts":{t:.3f},"dur":10.5,"args":{{"External id":{k},"Sequence number":{k},'
                              f'"Fwd thread id":0,"Record function id":0,"Ev Idx":{k}}}}}')
                events.append(f'{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":11,'
                              f'"tid":11,"ts":{t + 1:.3f},"dur":3.2,"args":{{"cbid":211,"correlation":{k}}}}}')
                events.append(f'{{"ph":"X","cat":"kernel","name":"sm90_xmma_gemm_bf16bf16_bf16f32",'
                              f'"pid":0,"tid":7,"ts":{t + 5:.3f},"dur":12.0,"args":{{"queued":0,'
                              f'"device":0,"context":1,"stream":7,"correlation":{k},"registers per '
                              f'thread":168,"grid":[132,1,1],"block":[384,1,1]}}}}')
                t += 14
            text = (",\n" if not first else "") + ",\n".join(events)
            first = False
            f.write(text)
            written += len(text)
            ts += dur + 5
        mb += 1
    f.write('\n],"traceName":"synthetic"}\n')
sys.stderr.write(f"{args.out}: {written / 1e6:.0f} MB, {mb} micro-batches\n")
