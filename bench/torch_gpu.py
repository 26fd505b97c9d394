#!/usr/bin/env python3
"""The PyTorch side of a GPU comparison: the networks of the shared reference
(../shared/reference/torch_models.py, whose path is given, since the GPU
machine only sees the working tree) on CUDA, timed as bench_models times
dflow with --device /device:GPU:0: each step ends when its result is back
(torch.cuda.synchronize), two warm-up steps first.

    python3 bench/torch_gpu.py REFERENCE.py --model countnet --batch 8 --size 224

Prints one JSON line: model, batch, size, params, train_img_per_s,
infer_img_per_s, latency_ms, device.
"""
import argparse, importlib.util, json, time
import torch


def load_reference(path):
    spec = importlib.util.spec_from_file_location("torch_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(fn, n):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        fn()
        torch.cuda.synchronize()  # as dflow's step, which returns its fetches to the host
    return (time.perf_counter() - start) / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("--model", choices=["countnet", "mbv1ssd"], required=True)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--steps", type=int, default=20)
    a = ap.parse_args()
    ref = load_reference(a.reference)
    torch.manual_seed(0)
    # fp32 everywhere, as dflow computes (no TF32 tensor-core shortcut)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    net = (ref.CountNet() if a.model == "countnet" else ref.MobileNetSSD()).to(dev)
    opt = (torch.optim.Adam(net.parameters(), 1e-5) if a.model == "countnet"
           else torch.optim.SGD(net.parameters(), 1e-3, momentum=0.9))
    x = torch.randn(a.batch, 3, a.size, a.size, device=dev)
    gt = torch.rand(a.batch, 1, a.size, a.size, device=dev)

    def step():
        opt.zero_grad()
        loss = net.loss(net(x), gt)
        loss.backward()
        opt.step()

    train = timed(step, a.steps)
    net.eval()
    with torch.no_grad():
        infer = timed(lambda: net(x), a.steps)
        x1 = x[:1].contiguous()
        lat = timed(lambda: net(x1), 3 * a.steps)
    print(json.dumps({
        "model": a.model, "batch": a.batch, "size": a.size,
        "params": sum(p.numel() for p in net.parameters()),
        "train_img_per_s": round(a.batch / train, 2),
        "infer_img_per_s": round(a.batch / infer, 2),
        "latency_ms": round(lat * 1000, 3),
        "device": torch.cuda.get_device_name()}))


if __name__ == "__main__":
    main()
