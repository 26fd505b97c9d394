#!/usr/bin/python3
"""spiral_mlp.py: apps/examples/spiral_mlp.cc written in Python. A
two-hidden-layer MLP learns to tell three interleaved spirals apart (Adam,
cosine-decayed learning rate); reports held-out accuracy, saves a checkpoint,
rebuilds the model in a fresh graph and session, restores it and checks that
the predictions are bit for bit the same. The model is built node for node
as the C++ program builds it (`--save-graph DIR` writes the same graph.json
as `spiral_mlp --save-graph DIR`) and trained on the same batches, so the
checkpoint it writes is the C++ program's, byte for byte.

    PYTHONPATH=build/python /usr/bin/python3 apps/examples/spiral_mlp.py --steps 3000
"""
import argparse
import json
import os
import time

import numpy as np

import dflow
from dflow import layers, ops


class Model:
    """The C++ example's models::BuildMlpClassifier, in the same order."""

    def __init__(self, steps, hidden=128, learning_rate=0.01, seed=1):
        dflow.reset_default_graph()
        dflow.set_random_seed(seed)
        self.x = dflow.placeholder(dflow.float32, [None, 2], name="x")
        self.labels = dflow.placeholder(dflow.int32, [None], name="labels")
        h = self.x
        for i in range(2):
            h = layers.dense(h, hidden, activation="relu", name=f"hidden{i + 1}")
        self.logits = layers.dense(h, 3, name="logits")
        xent, _ = ops.SparseSoftmaxCrossEntropyWithLogits(self.logits, self.labels)
        self.loss = ops.Mean(xent, dflow.constant(0), name="loss")  # as ops::Mean makes its axis
        lr = dflow.train.cosine_decay(learning_rate, dflow.train.get_or_create_global_step(),
                                      decay_steps=steps, alpha=0.05)
        self.train = dflow.train.AdamOptimizer(lr).minimize(self.loss)
        self.init = dflow.global_variables_initializer(name="init")


_MASK = (1 << 64) - 1


def splitmix64(state):
    """(next state, value): the C++ example's generator (Steele, Lea and Flood 2014)."""
    state = (state + 0x9E3779B97F4A7C15) & _MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return state, z ^ (z >> 31)


def batches(rows, batch, seed):
    """The C++ example's batches: a permutation walked in order, reshuffled
    in place (Fisher-Yates over splitmix64) whenever it runs out."""
    order, state, next_row = list(range(rows)), seed, rows
    while True:
        picked = []
        while len(picked) < batch:
            if next_row == rows:
                for i in range(rows - 1, 0, -1):
                    state, value = splitmix64(state)
                    j = value % (i + 1)
                    order[i], order[j] = order[j], order[i]
                next_row = 0
            picked.append(order[next_row])
            next_row += 1
        yield np.array(picked)


def accuracy(logits, labels):
    return float(np.mean(np.argmax(logits, axis=1) == labels))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="spiral_run_py", help="directory for checkpoints")
    parser.add_argument("--save-graph", help="write the training graph as DIR/graph.json")
    args = parser.parse_args(argv)

    train_x, train_y = dflow.data.spirals(points_per_class=1000, seed=args.seed)
    test_x, test_y = dflow.data.spirals(points_per_class=500, seed=args.seed + 1000)
    model = Model(args.steps, seed=args.seed)
    if args.save_graph:
        os.makedirs(args.save_graph, exist_ok=True)
        dflow.get_default_graph().save(os.path.join(args.save_graph, "graph.json"))
    with dflow.Session() as sess:
        sess.run(model.init)
        draw = batches(len(train_y), args.batch, args.seed)
        start = time.perf_counter()
        for step in range(1, args.steps + 1):
            rows = next(draw)
            _, loss = sess.run([model.train, model.loss], {model.x: train_x[rows], model.labels: train_y[rows]})
            if step % 500 == 0 or step == 1:
                print(f"step {step}  loss {loss:.4f}")
        seconds = time.perf_counter() - start
        logits = sess.run(model.logits, {model.x: test_x})
        held_out = accuracy(logits, test_y)
        print(f"held-out accuracy {held_out} after {args.steps} steps in {seconds:.2f} s")
        path = dflow.train.Saver().save(sess, args.out + "/", global_step=args.steps)
        print(f"saved {path}")

    fresh = Model(args.steps, seed=args.seed)  # as a new process would
    with dflow.Session() as restored:
        dflow.train.Saver().restore(restored, dflow.train.latest_checkpoint(args.out))
        again = restored.run(fresh.logits, {fresh.x: test_x})
    identical = again.tobytes() == logits.tobytes()
    print(f"restored into a fresh session: predictions {'identical' if identical else 'DIFFER'}")
    print(json.dumps({"test_accuracy": held_out, "train_seconds": seconds, "steps": args.steps,
                      "restored_identical": identical}))
    return 0 if identical else 1


if __name__ == "__main__":
    raise SystemExit(main())
