#!/usr/bin/python3
"""spiral_ring.py: data-parallel training, Horovod's way; apps/examples/spiral_ring.cc
in Python. Start N workers with

    dflow launch -n 2 -- /usr/bin/python3 apps/examples/spiral_ring.py --steps 600

Each trains the spiral MLP on its own shard of the data; a DistributedOptimizer
averages the gradients over the workers (ring all-reduce, in the graph) and
broadcast_variables() starts every worker from the chief's variables. The
graph, shards and batches are the C++ program's, so the chief's checkpoint is
its checkpoint, byte for byte.
"""
import argparse

import numpy as np

import dflow
from dflow import layers, ops


def shard_batch(x, y, k, n, step, batch):
    """Worker k of n: rows k, k + n, ... of its shard, the j-th drawn being
    shard row j * 7919 mod the shard's size (the data is sorted by class)."""
    shard_rows = (len(y) - k + n - 1) // n
    rows = k + (np.arange(step * batch, (step + 1) * batch) * 7919 % shard_rows) * n
    return x[rows], y[rows]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--batch", type=int, default=32, help="batch size per worker")
    parser.add_argument("--out", default="spiral_ring_run", help="directory for the chief's checkpoint")
    args = parser.parse_args(argv)

    dflow.set_random_seed(1)
    x = dflow.placeholder(dflow.float32, [None, 2], name="x")
    labels = dflow.placeholder(dflow.int32, [None], name="labels")
    h = x
    for name in ("hidden1", "hidden2"):
        h = layers.dense(h, 128, activation="relu", name=name)
    logits = layers.dense(h, 3, name="logits")
    xent, _ = ops.SparseSoftmaxCrossEntropyWithLogits(logits, labels)
    loss = ops.Mean(xent, dflow.constant(0), name="loss")

    opt = dflow.distribute.DistributedOptimizer(dflow.train.AdamOptimizer(0.01))
    train = opt.minimize(loss)
    init = dflow.global_variables_initializer(name="init")
    sync = opt.broadcast_variables()

    with dflow.Session() as sess:
        sess.run(init)
        sess.run(sync)
        data_x, data_y = dflow.data.spirals(points_per_class=1000, seed=1)
        for step in range(1, args.steps + 1):
            bx, by = shard_batch(data_x, data_y, opt.rank, opt.size, step - 1, args.batch)
            _, value = sess.run([train, loss], {x: bx, labels: by})
            if opt.rank == 0 and step % 100 == 0:
                print(f"step {step}  loss {value:.6g}", flush=True)
        opt.finish()
        if opt.rank != 0:
            return 0
        test_x, test_y = dflow.data.spirals(points_per_class=500, seed=1001)
        accuracy = float(np.mean(np.argmax(sess.run(logits, {x: test_x}), axis=1) == test_y))
        print(f"held-out accuracy {accuracy:.6g} with {opt.size} worker(s)")
        print("saved", dflow.train.Saver().save(sess, args.out + "/", global_step=args.steps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
