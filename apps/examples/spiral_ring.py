#!/usr/bin/python3
"""spiral_ring.py: data-parallel training, Horovod's way; apps/examples/spiral_ring.cc
in Python. Start N workers with

    dflow launch -n 2 -- /usr/bin/python3 apps/examples/spiral_ring.py --steps 600
    dflow launch -n 2 --ps 1 -- /usr/bin/python3 apps/examples/spiral_ring.py --steps 600

Each trains the spiral MLP on its own shard of the data; a DistributedOptimizer
averages the gradients over the workers (ring all-reduce in the graph, or on
the parameter servers, which hold the variables) and a TrainingSession starts
every worker from the chief's variables. The graph, shards and batches are the
C++ program's, so the chief's checkpoint is its checkpoint, byte for byte,
under either strategy.
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

    dflow.distribute.serve_if_parameter_server()
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
    opt.minimize(loss)

    # One thread: every sum in one order, so both strategies give the same bits.
    with dflow.distribute.TrainingSession(opt, num_steps=args.steps, num_threads=1) as sess:
        data_x, data_y = dflow.data.spirals(points_per_class=1000, seed=1)
        while not sess.should_stop():
            bx, by = shard_batch(data_x, data_y, sess.rank, sess.size, sess.next_step, args.batch)
            value = sess.run(loss, {x: bx, labels: by})
            if sess.is_chief and sess.global_step % 100 == 0:
                print(f"step {sess.global_step}  loss {value:.6g}", flush=True)
        sess.close()
        if not sess.is_chief:
            return 0
        test_x, test_y = dflow.data.spirals(points_per_class=500, seed=1001)
        predicted = np.argmax(sess.session.run(logits, {x: test_x}), axis=1)
        accuracy = float(np.mean(predicted == test_y))
        print(f"held-out accuracy {accuracy:.6g} with {sess.size} worker(s)")
        saver = dflow.train.Saver(sess.variables)
        print("saved", saver.save(sess.session, args.out + "/", global_step=args.steps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
