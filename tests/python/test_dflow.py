"""The Python package against the engine: ops from the registry, numpy in
and out without copies, errors as exceptions, gradients, training with
checkpoints, the GIL released while a step runs. Run by `./dev test` with
PYTHONPATH=build/python (tests/meson.build)."""
import contextlib
import importlib.util
import io
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import numpy as np

import dflow
from dflow import ops


class Fresh(unittest.TestCase):
    def setUp(self):
        dflow.reset_default_graph()


class OpsTest(Fresh):
    def test_every_registered_op_is_a_function_with_its_signature(self):
        names = [d["name"] for d in dflow._dflow.op_defs()]
        self.assertGreater(len(names), 100)
        for name in names:
            self.assertTrue(callable(getattr(ops, name)), name)
        self.assertIn("MatMul(a: T, b: T) -> (product: T)", ops.MatMul.__doc__)
        self.assertIn("transpose_a: bool", ops.MatMul.__doc__)

    def test_the_readme_graph(self):
        x = dflow.placeholder(dflow.float32, [None, 2], name="x")
        w = dflow.constant([[1, -1], [2, 0.5]], name="w")
        y = ops.Relu(ops.MatMul(x, w, name="mm"), name="y")
        self.assertEqual(y.name, "y")  # output 0 is named by its node alone
        self.assertEqual(y.shape, (None, 2))
        with dflow.Session() as sess:
            out = sess.run(y, {x: [[1, 1], [3, -2]]})
        np.testing.assert_array_equal(out, np.array([[3, 0], [0, 0]], np.float32))
        self.assertEqual(out.dtype, np.float32)

    def test_attrs_lists_multiple_outputs_and_operators(self):
        x = dflow.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
        t = ops.MatMul(x, x, transpose_b=True)
        parts = ops.Split(1, x, num_split=3)
        self.assertEqual(len(parts), 3)
        total = ops.AddN([p * 2.0 for p in parts])
        z = (x - 1.0) / 2.0 + -x
        with dflow.Session() as sess:
            t_value, total_value, z_value = sess.run([t, total, z])
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        np.testing.assert_array_equal(t_value, a @ a.T)
        np.testing.assert_array_equal(total_value, 2 * a.sum(1, keepdims=True))
        np.testing.assert_array_equal(z_value, (a - 1) / 2 - a)

    def test_name_scopes_and_devices(self):
        with dflow.name_scope("layer"):
            with dflow.device("/device:CPU:0"):
                c = dflow.constant(1.0, name="c")
            d = ops.Identity(c)
        self.assertEqual(c.name, "layer/c")
        self.assertEqual(c.node.device, "/device:CPU:0")
        self.assertTrue(d.name.startswith("layer/"))
        self.assertEqual(d.node.device, "")


class GraphFileTest(Fresh):
    def test_a_saved_graph_loads_runs_by_name_and_takes_more_ops(self):
        x = dflow.placeholder(dflow.float32, [None, 2], name="x")
        w = dflow.constant([[1, -1], [2, 0.5]], name="w")
        ops.Relu(ops.MatMul(x, w, name="mm"), name="y")
        with tempfile.TemporaryDirectory() as work:
            path = os.path.join(work, "graph.json")
            dflow.get_default_graph().save(path)
            dflow.reset_default_graph()
            graph = dflow.Graph.load(path)
        self.assertEqual(graph.num_nodes, 4)
        self.assertEqual(graph.get_operation_by_name("mm").op, "MatMul")
        self.assertEqual(graph.metadata, {})
        with graph.as_default():
            doubled = graph.get_operation_by_name("y").output(0) * 2.0
        self.assertEqual(dflow.get_default_graph().num_nodes, 0)  # the block's ops went to the loaded graph
        with dflow.Session(graph) as sess:
            y, twice = sess.run(["y", doubled], {"x": [[1, 1], [3, -2]]})
        np.testing.assert_array_equal(y, np.array([[3, 0], [0, 0]], np.float32))
        np.testing.assert_array_equal(twice, 2 * y)

    def test_metadata_and_bad_files(self):
        node = {"name": "c", "op": "Const", "attrs": {"dtype": "float32",
                "value": {"dtype": "float32", "shape": [2], "values": [1, 2]}}}
        detector = json.dumps({"input": "images", "outputs": ["boxes"]})
        with tempfile.TemporaryDirectory() as work:
            path = os.path.join(work, "graph.json")
            with open(path, "w") as f:
                json.dump({"format": "dflow.graph/1", "seed": 0, "nodes": [node],
                           "metadata": {"dflow-detect": detector}}, f)
            graph = dflow.Graph.load(path)
            bad = os.path.join(work, "bad.json")
            with open(bad, "w") as f:
                f.write('{"format": "dflow.graph/1", "nodes": [')
            with self.assertRaisesRegex(dflow.DflowError, "bad.json"):
                dflow.Graph.load(bad)
            with self.assertRaises(dflow.DflowError) as missing:
                dflow.Graph.load(os.path.join(work, "missing.json"))
            self.assertEqual(missing.exception.code, "NotFound")
        self.assertEqual(json.loads(graph.metadata["dflow-detect"])["outputs"], ["boxes"])
        with dflow.Session(graph) as sess:
            np.testing.assert_array_equal(sess.run("c"), [1, 2])


class NumpyTest(Fresh):
    def test_fetched_arrays_share_the_tensors_bytes(self):
        y = dflow.constant(np.ones((64, 64), np.float32)) * 3.0
        with dflow.Session() as sess:
            value = sess.run(y)
        self.assertFalse(value.flags.owndata)  # a view of the tensor, kept alive by its base
        del sess
        np.testing.assert_array_equal(value, np.full((64, 64), 3, np.float32))

    def test_every_dtype_round_trips(self):
        for dtype in (np.float16, np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64, np.bool_):
            dflow.reset_default_graph()
            value = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
            x = dflow.placeholder(dflow.DType.__members__[np.dtype(dtype).name if dtype is not np.bool_ else "bool"],
                                  [3, 4])
            with dflow.Session() as sess:
                out = sess.run(ops.Identity(x), {x: value})
            self.assertEqual(out.dtype, np.dtype(dtype))
            np.testing.assert_array_equal(out, value)

    def test_a_fed_array_is_never_written(self):
        # The fed array becomes the variable's value without a copy; the
        # optimizer's in-place update must not write into it.
        start = np.ones(4, np.float32)
        keep = start.copy()
        init = dflow.placeholder(dflow.float32, [4])
        v = dflow.Variable(np.zeros(4, np.float32))
        assign = ops.Assign(v, init)
        step = ops.ApplyGradientDescent(v, 0.5, np.ones(4, np.float32))
        with dflow.Session() as sess:
            sess.run(assign, {init: start})
            sess.run(step)
            self.assertEqual(sess.run(v).tolist(), [0.5] * 4)
        np.testing.assert_array_equal(start, keep)

    def test_non_contiguous_feeds_are_copied(self):
        x = dflow.placeholder(dflow.float32, [3, 2])
        value = np.arange(6, dtype=np.float32).reshape(2, 3).T  # Fortran order
        with dflow.Session() as sess:
            np.testing.assert_array_equal(sess.run(ops.Identity(x), {x: value}), value)


class ErrorsTest(Fresh):
    def test_a_bad_shape_is_an_exception_with_the_engines_message(self):
        a = dflow.constant(np.zeros((2, 3), np.float32))
        with self.assertRaises(dflow.DflowError) as raised:
            ops.MatMul(a, a)
        self.assertEqual(raised.exception.code, "InvalidArgument")
        self.assertIn("[2,3]", str(raised.exception))

    def test_run_time_errors(self):
        x = dflow.placeholder(dflow.float32, [2], name="needed")
        y = ops.Identity(x)
        with dflow.Session() as sess:
            with self.assertRaisesRegex(dflow.DflowError, "needed"):
                sess.run(y)
            with self.assertRaises(dflow.DflowError):
                sess.run(y, {x: np.zeros(3, np.float32)})
            np.testing.assert_array_equal(sess.run(y, {x: [1, 2]}), [1, 2])  # still usable

    def test_unknown_attrs_and_wrong_arity(self):
        with self.assertRaisesRegex(dflow.DflowError, "no attr 'transpose_c'"):
            ops.MatMul(1.0, 1.0, transpose_c=True)
        with self.assertRaisesRegex(TypeError, "takes 2 inputs"):
            ops.MatMul(1.0)

    def test_unsupported_numpy_dtypes(self):
        with self.assertRaisesRegex(dflow.DflowError, "complex"):
            dflow.constant(np.zeros(2, np.complex64))


class GradientsAndTrainingTest(Fresh):
    def test_gradients(self):
        x = dflow.placeholder(dflow.float32, [3])
        unused = dflow.placeholder(dflow.float32, [3])
        y = ops.Sum(x * x, [0])
        dx, du = dflow.gradients(y, [x, unused])
        self.assertIsNone(du)
        with dflow.Session() as sess:
            np.testing.assert_array_equal(sess.run(dx, {x: [1, -2, 3]}), [2, -4, 6])

    def test_adam_fits_a_line_and_a_checkpoint_restores_it_in_a_fresh_graph(self):
        rng = np.random.default_rng(0)
        xs = rng.normal(size=(64, 2)).astype(np.float32)
        ys = xs @ np.array([[2.0], [-3.0]], np.float32) + 1.0

        def build():
            dflow.reset_default_graph()
            dflow.set_random_seed(5)
            x = dflow.placeholder(dflow.float32, [None, 2], name="x")
            w = dflow.Variable(ops.RandomStandardNormal([2, 1], dtype=dflow.float32), name="w")
            b = dflow.Variable(np.zeros(1, np.float32), name="b")
            y = ops.MatMul(x, w) + b
            return x, w, b, y

        x, w, b, y = build()
        target = dflow.placeholder(dflow.float32, [None, 1])
        loss = ops.Mean(ops.SquaredDifference(y, target), [0, 1])
        train = dflow.train.AdamOptimizer(0.1).minimize(loss)
        saver = dflow.train.Saver([w, b])
        with dflow.Session() as sess, tempfile.TemporaryDirectory() as run:
            sess.run(dflow.global_variables_initializer())
            first = sess.run(loss, {x: xs, target: ys})
            for _ in range(300):
                _, last = sess.run([train, loss], {x: xs, target: ys})
            self.assertLess(last, first / 100)
            predictions = sess.run(y, {x: xs})
            path = saver.save(sess, run + "/", global_step=300)
            self.assertTrue(path.endswith("model-300.safetensors"), path)
            self.assertEqual(dflow.train.latest_checkpoint(run), path)

            x2, w2, b2, y2 = build()
            with dflow.Session() as fresh:
                dflow.train.Saver([w2, b2]).restore(fresh, path)
                np.testing.assert_array_equal(fresh.run(y2, {x2: xs}), predictions)


class SpiralExampleTest(Fresh):
    """apps/examples/spiral_mlp.py against the C++ spiral_mlp: the same graph
    file and, trained on the same batches, the same checkpoint bytes."""

    def test_python_and_cpp_train_to_the_same_bits(self):
        cpp = os.environ.get("SPIRAL_MLP")
        if not cpp:
            self.skipTest("SPIRAL_MLP (the C++ example's path) is not set; meson sets it")
        example = os.path.join(os.path.dirname(__file__), "..", "..", "apps", "examples", "spiral_mlp.py")
        spec = importlib.util.spec_from_file_location("spiral_mlp_example", example)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        with tempfile.TemporaryDirectory() as work:
            subprocess.run([cpp, "--steps", "200", "--save-graph", f"{work}/cpp", "--out", f"{work}/cpp-run"],
                           check=True, stdout=subprocess.DEVNULL)
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(module.main(["--steps", "200", "--save-graph", f"{work}/py",
                                              "--out", f"{work}/py-run"]), 0)
            for a, b in (("cpp/graph.json", "py/graph.json"),
                         ("cpp-run/model-200.safetensors", "py-run/model-200.safetensors")):
                with open(f"{work}/{a}", "rb") as f, open(f"{work}/{b}", "rb") as g:
                    self.assertTrue(f.read() == g.read(), f"{a} and {b} differ")


class DistributeTest(Fresh):
    """dflow.distribute: alone, a process is worker 0 of 1; with `dflow launch
    -n 2`, apps/examples/spiral_ring.py and the C++ spiral_ring train to the
    same checkpoint bytes, on the ring or with a parameter server; a chief
    that fails ends the job with its error, no task left waiting."""

    def test_alone_a_process_is_a_job_of_one_worker(self):
        os.environ.pop("DFLOW_CLUSTER", None)
        self.assertEqual((dflow.distribute.rank(), dflow.distribute.size()), (0, 1))
        opt = dflow.distribute.DistributedOptimizer(dflow.train.GradientDescentOptimizer(0.5))
        with self.assertRaisesRegex(dflow.DflowError, "call minimize"):
            opt.broadcast_variables()
        v = dflow.Variable(np.float32(3.0), name="v")
        train = opt.minimize(ops.Square(v))
        init = dflow.global_variables_initializer()
        sync = opt.broadcast_variables()
        with dflow.Session() as sess:
            sess.run(init)
            sess.run(sync)
            sess.run(train)
            self.assertEqual(float(sess.run(v)), 0.0)  # 3 - 0.5 * 2 * 3
        opt.finish()
        with self.assertRaises(TypeError):
            dflow.distribute.DistributedOptimizer("adam")

    def test_alone_a_training_session_restores_and_goes_on(self):
        os.environ.pop("DFLOW_CLUSTER", None)
        dflow.distribute.serve_if_parameter_server()  # not a ps task: returns
        v = dflow.Variable(np.float32(3.0), name="v")
        opt = dflow.distribute.DistributedOptimizer(dflow.train.GradientDescentOptimizer(0.25))
        with self.assertRaisesRegex(TypeError, "DistributedOptimizer"):
            dflow.distribute.TrainingSession(dflow.train.GradientDescentOptimizer(0.25), num_steps=1)
        with self.assertRaisesRegex(dflow.DflowError, "call minimize"):
            dflow.distribute.TrainingSession(opt, num_steps=1)
        loss = ops.Square(v)
        opt.minimize(loss)
        with tempfile.TemporaryDirectory() as work:
            with dflow.distribute.TrainingSession(opt, num_steps=2) as sess:
                self.assertEqual((sess.rank, sess.size, sess.is_chief), (0, 1, True))
                values = []
                while not sess.should_stop():
                    values.append(float(sess.run(loss)))  # before each step's update
                with self.assertRaisesRegex(dflow.DflowError, "steps are done"):
                    sess.run(loss)
                with self.assertRaisesRegex(dflow.DflowError, "runs one training step"):
                    sess.run([ops.NoOp()])
                sess.close()
                self.assertEqual(values, [9.0, 2.25])  # v: 3 -> 1.5 -> 0.75
                self.assertEqual(float(sess.session.run(v)), 0.75)
                path = dflow.train.Saver(sess.variables).save(sess.session, work + "/", global_step=2)
            with dflow.distribute.TrainingSession(opt, num_steps=3, restore_from=path) as sess:
                self.assertEqual(sess.global_step, 2)
                sess.run(loss)
                self.assertEqual(float(sess.session.run(v)), 0.375)

    def _launch(self, port, program, *options):
        launcher = os.environ["DFLOW_EXE"]
        return subprocess.run([launcher, "launch", "-n", "2", *options, "--base-port", str(port), "--", *program],
                              capture_output=True, text=True, timeout=120)

    def test_two_workers_in_python_and_cpp_train_to_the_same_bits_ring_or_ps(self):
        cpp = os.environ.get("SPIRAL_RING")
        if not os.environ.get("DFLOW_EXE") or not cpp:
            self.skipTest("DFLOW_EXE and SPIRAL_RING (the C++ programs' paths) are not set; meson sets them")
        example = os.path.join(os.path.dirname(__file__), "..", "..", "apps", "examples", "spiral_ring.py")
        port = 20000 + random.randrange(12000)  # below the ephemeral ports
        with tempfile.TemporaryDirectory() as work:
            outputs = {}
            for name, program in (("cpp", [cpp]), ("py", [sys.executable, example])):
                for strategy, options in (("ring", []), ("ps", ["--ps", "1"])):
                    port += 10
                    run = self._launch(port, [*program, "--steps", "300", "--out", f"{work}/{name}-{strategy}"],
                                       *options)
                    self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
                    outputs[name, strategy] = run.stdout
            self.assertIn("with 2 worker(s)", outputs["py", "ps"])
            self.assertIn("told to stop (training finished)", outputs["py", "ps"])
            accuracy = float(re.search(r"held-out accuracy ([0-9.]+)", outputs["py", "ps"]).group(1))
            self.assertGreater(accuracy, 0.9)
            with open(f"{work}/cpp-ring/model-300.safetensors", "rb") as f:
                expected = f.read()
            for name, strategy in outputs:
                with open(f"{work}/{name}-{strategy}/model-300.safetensors", "rb") as f:
                    self.assertTrue(f.read() == expected, f"{name} under {strategy} differs from C++ on the ring")

    def test_a_chief_that_fails_stops_the_parameter_servers_and_the_other_worker(self):
        if not os.environ.get("DFLOW_EXE"):
            self.skipTest("DFLOW_EXE (the launcher's path) is not set; meson sets it")
        script = os.path.join(os.path.dirname(__file__), "ps_chief_fails.py")
        run = self._launch(20000 + random.randrange(12000), [sys.executable, script], "--ps", "1")
        self.assertNotEqual(run.returncode, 0)
        output = run.stdout + run.stderr
        self.assertIn("the chief's data ran out at step 5", output)
        self.assertIn("stopped training after an error", output)  # what worker 1 was told


class SmallMlpTest(Fresh):
    """apps/examples/small_mlp.{py,cc}, the first program docs/first_program.md
    shows: both learn the spirals."""

    def test_both_languages_learn_the_spirals(self):
        example = os.path.join(os.path.dirname(__file__), "..", "..", "apps", "examples", "small_mlp.py")
        runs = [[sys.executable, example]]
        if os.environ.get("SMALL_MLP"):
            runs.append([os.environ["SMALL_MLP"]])
        for command in runs:
            run = subprocess.run(command, capture_output=True, text=True, timeout=120)
            self.assertEqual(run.returncode, 0, run.stderr)
            accuracy = float(re.search(r"held-out accuracy ([0-9.]+)", run.stdout).group(1))
            self.assertGreater(accuracy, 0.95, command)


class GilTest(Fresh):
    def test_other_threads_run_python_while_a_step_runs(self):
        # Fed, so that constant folding cannot do the work while the graph is built.
        a = dflow.placeholder(dflow.float32, [768, 768])
        value = np.random.default_rng(1).normal(size=(768, 768)).astype(np.float32) / 30
        product = a
        for _ in range(8):
            product = ops.MatMul(product, a)
        sess = dflow.Session(num_threads=1)
        sess.run(product, {a: value})  # built and warm
        ticks = []  # when the counting thread made progress
        done = threading.Event()
        span = []

        def count():
            n = 0
            while not done.is_set():
                n += 1
                if n % 200 == 0:
                    ticks.append(time.perf_counter())

        counting = threading.Thread(target=count)
        counting.start()
        time.sleep(0.01)
        start = time.perf_counter()
        sess.run(product, {a: value})
        span.append((start, time.perf_counter()))
        done.set()
        counting.join()
        start, end = span[0]
        middle = [t for t in ticks if start + 0.2 * (end - start) < t < end - 0.2 * (end - start)]
        # Holding the GIL through the step would stop the other thread for all of it.
        self.assertGreater(end - start, 0.02)
        self.assertGreater(len(middle), 10, f"step of {end - start:.3f} s")


if __name__ == "__main__":
    unittest.main()
