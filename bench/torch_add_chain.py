#!/usr/bin/python3
"""The PyTorch side of the executor-overhead comparison: a chain of 1,000
tiny (4-element float32) adds, y_i = y_(i-1) + x, as in bench/executor.cc.
Prints one JSON line with ns per add for eager mode and for TorchScript.
Run with Debian's /usr/bin/python3 (python3-torch)."""
import json, statistics, time
import torch

torch.set_num_threads(2)
LENGTH, REPS = 1000, 200


def chain(x):
    y = x
    for _ in range(1000):  # a literal: TorchScript cannot read the global
        y = y + x
    return y


def ns_per_add(fn, x):
    for _ in range(20):  # warm-up
        fn(x)
    times = []
    for _ in range(5):
        start = time.perf_counter_ns()
        for _ in range(REPS):
            fn(x)
        times.append((time.perf_counter_ns() - start) / (REPS * LENGTH))
    return statistics.median(times)


x = torch.tensor([1.0, 2.0, 3.0, 4.0])
with torch.no_grad():
    eager = ns_per_add(chain, x)
    scripted = ns_per_add(torch.jit.script(chain), x)
print(json.dumps({"torch": torch.__version__, "length": LENGTH,
                  "eager_ns_per_add": round(eager, 1), "torchscript_ns_per_add": round(scripted, 1)}))
