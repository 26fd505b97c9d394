#!/usr/bin/python3
"""small_mlp.py: apps/examples/small_mlp.cc in Python. An MLP (2 -> 64 -> 64
-> 3) learns the three spirals with Adam, then reports held-out accuracy.

    PYTHONPATH=build/python /usr/bin/python3 apps/examples/small_mlp.py
"""
import numpy as np

import dflow
from dflow import layers, ops

train_x, train_y = dflow.data.spirals(points_per_class=1000, seed=1)
test_x, test_y = dflow.data.spirals(points_per_class=500, seed=2)

x = dflow.placeholder(dflow.float32, [None, 2])
labels = dflow.placeholder(dflow.int32, [None])
h = layers.dense(x, 64, activation="relu", name="hidden1")
h = layers.dense(h, 64, activation="relu", name="hidden2")
logits = layers.dense(h, 3, name="logits")
loss = ops.Mean(ops.SparseSoftmaxCrossEntropyWithLogits(logits, labels)[0], 0)
train_op = dflow.train.AdamOptimizer(0.01).minimize(loss)

with dflow.Session() as sess:
    sess.run(dflow.global_variables_initializer())
    for step in range(1, 1001):
        _, value = sess.run([train_op, loss], {x: train_x, labels: train_y})
        if step % 250 == 0:
            print(f"step {step} loss {value:.4f}")
    predicted = np.argmax(sess.run(logits, {x: test_x}), axis=1)
    print("held-out accuracy", np.mean(predicted == test_y))
