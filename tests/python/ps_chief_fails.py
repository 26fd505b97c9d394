#!/usr/bin/python3
"""A worker of a parameter-server job (`dflow launch -n 2 --ps 1`) whose chief
fails after five steps: the chief's TrainingSession, going away with the
exception, stops the ps task and tells the other worker that training failed,
so the job ends with the chief's error instead of waiting forever
(tests/python/test_dflow.py runs it)."""
import dflow
from dflow import ops

dflow.distribute.serve_if_parameter_server()
v = dflow.Variable(1.0, name="v")
loss = ops.Square(v)
opt = dflow.distribute.DistributedOptimizer(dflow.train.GradientDescentOptimizer(0.1))
opt.minimize(loss)
with dflow.distribute.TrainingSession(opt, num_steps=1000) as sess:
    while not sess.should_stop():
        if sess.is_chief and sess.global_step == 5:
            raise RuntimeError("the chief's data ran out at step 5")
        sess.run(loss)
