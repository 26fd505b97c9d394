#!/usr/bin/python3
"""The PyTorch side of the MLP training-step comparison (bench/mlp_train.cc):
2 -> 128 -> 128 -> 3 with ReLU, cross-entropy, Adam(lr=0.01), batch 64,
float32, 2 threads. One step = zero_grad, forward, loss, backward, step, and
reading the loss value (as dflow fetches it). Prints one JSON line: median
microseconds per step over 5 runs of 500 steps after 200 warm-up steps.
Run with Debian's /usr/bin/python3 (python3-torch)."""
import json, math, statistics, time
import torch

torch.set_num_threads(2)
torch.manual_seed(1)
BATCH, STEPS, RUNS = 64, 500, 5

model = torch.nn.Sequential(torch.nn.Linear(2, 128), torch.nn.ReLU(),
                            torch.nn.Linear(128, 128), torch.nn.ReLU(),
                            torch.nn.Linear(128, 3))
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()
# Spiral points like models/data/spirals.cc (the values do not change the cost).
r = torch.arange(BATCH, dtype=torch.float32) / BATCH
labels = torch.arange(BATCH) % 3
angle = 4 * r + 2 * math.pi * labels / 3
x = torch.stack([r * torch.cos(angle), r * torch.sin(angle)], dim=1)


def step():
    optimizer.zero_grad()
    loss = loss_fn(model(x), labels)
    loss.backward()
    optimizer.step()
    return loss.item()


for _ in range(200):
    step()
times = []
for _ in range(RUNS):
    start = time.perf_counter_ns()
    for _ in range(STEPS):
        step()
    times.append((time.perf_counter_ns() - start) / STEPS / 1000)
print(json.dumps({"torch": torch.__version__, "batch": BATCH, "us_per_step": round(statistics.median(times), 1),
                  "runs_us": [round(t, 1) for t in times]}))
