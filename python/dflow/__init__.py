"""dflow for Python: a TensorFlow-1-style dataflow engine.

Graphs are built with ops (every registered op, under its TensorFlow name,
attrs as keyword arguments), then run by a Session:

    import numpy as np
    import dflow
    from dflow import ops

    x = dflow.placeholder(dflow.float32, [None, 2], name="x")
    w = dflow.constant([[1, -1], [2, 0.5]], name="w")
    y = ops.Relu(ops.MatMul(x, w), name="y")
    with dflow.Session() as sess:
        print(sess.run(y, {x: np.ones((1, 2), np.float32)}))

Training adds gradients and optimizers (dflow.gradients, dflow.train);
checkpoints are dflow.train.Saver's. Errors raise dflow.DflowError with the
engine's message; its `code` names the kind ("InvalidArgument", ...).
See docs/python.md.
"""
import contextlib
import types

import numpy as np

from . import _dflow
from ._dflow import DflowError, DType, Output
from ._dflow import Node as Operation

__all__ = ["DflowError", "DType", "Output", "Operation", "Graph", "Session", "ops", "train", "distribute", "layers", "data",
           "placeholder", "constant", "Variable", "gradients", "global_variables_initializer",
           "trainable_variables", "name_scope", "device", "control_dependencies",
           "get_default_graph", "reset_default_graph", "set_random_seed",
           "float16", "float32", "float64", "int8", "uint8", "int32", "int64", "bool_"]

float16, float32, float64 = DType.float16, DType.float32, DType.float64
int8, uint8, int32, int64, bool_ = DType.int8, DType.uint8, DType.int32, DType.int64, DType.bool


class Graph:
    """A graph and the stack of scopes (name scopes, devices, control
    dependencies) that ops added to it are made under."""

    def __init__(self):
        self._scopes = [_dflow.Scope.new_root()]
        self._keep = []  # what the graph's ops need alive (a DistributedOptimizer's group)

    @contextlib.contextmanager
    def as_default(self):
        """Ops built inside the block go to this graph."""
        _graphs.append(self)
        try:
            yield self
        finally:
            _graphs.pop()

    def get_operation_by_name(self, name):
        return self._scopes[0].find(name)

    def save(self, path):
        """Writes the graph file (`dflow run`, `dflow dot` and C++'s LoadGraph read it)."""
        self._scopes[0].save(path)

    @classmethod
    def load(cls, path):
        """The graph of a graph file (`save`, C++'s SaveGraph, `dflow freeze`,
        `dflow quantize`, `dflow-detect export`): run it by its tensors' names,
        or add ops to it under `as_default()`."""
        graph = cls()
        graph._scopes = [_dflow.Scope.load(path)]
        return graph

    @property
    def metadata(self):
        """The graph file's metadata, {key: text}: what a program needs to use
        the graph (`dflow-detect export` keeps the detector's input, outputs
        and classes under "dflow-detect", as JSON)."""
        return self._scopes[0].metadata()

    @property
    def num_nodes(self):
        return self._scopes[0].num_nodes()

    @contextlib.contextmanager
    def _pushed(self, scope):
        self._scopes.append(scope)
        try:
            yield
        finally:
            self._scopes.pop()


_graphs = [Graph()]


def get_default_graph():
    return _graphs[-1]


def reset_default_graph():
    """A fresh default graph (outside any `as_default` block)."""
    _graphs[:] = [Graph()]


def set_random_seed(seed):
    """The graph-level seed: random ops without their own seed derive theirs from it."""
    get_default_graph()._scopes[0].set_seed(int(seed))


def _scope(name=None):
    scope = get_default_graph()._scopes[-1]
    return scope.with_op_name(name) if name else scope


def name_scope(name):
    """Names of ops made inside the block start with "<outer>/name/"."""
    return get_default_graph()._pushed(_scope().new_sub_scope(name))


def device(name):
    """Ops made inside the block ask for this device ("/device:GPU:0", "/job:ps/task:0")."""
    return get_default_graph()._pushed(_scope().with_device(name))


def control_dependencies(operations):
    """Ops made inside the block run after these."""
    nodes = [op.node if isinstance(op, Output) else op for op in operations]
    return get_default_graph()._pushed(_scope().with_control_dependencies(nodes))


def _literal(value, dtype=None):
    """A Python or numpy value as an array; Python floats become float32 and
    ints int32, as in TensorFlow (the engine converts a literal to the dtype
    of the op's other inputs where it knows it)."""
    if dtype is not None:
        return np.asarray(value, dtype=_numpy_dtype(dtype))
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value)
    array = np.asarray(value)
    if array.dtype == np.float64:
        return array.astype(np.float32)
    if array.dtype == np.int64:
        return array.astype(np.int32)
    return array


def _numpy_dtype(dtype):
    return dtype.as_numpy_dtype if isinstance(dtype, DType) else np.dtype(dtype)


def _input(value):
    if isinstance(value, (Output, Operation)):
        return value
    return _literal(value)


def _results(node):
    """An op's outputs as TensorFlow returns them: none (the Operation), one, or a tuple."""
    if node.num_outputs == 0:
        return node
    if node.num_outputs == 1:
        return node.output(0)
    return tuple(node.output(i) for i in range(node.num_outputs))


def _make_op(definition):
    op_name = definition["name"]
    inputs = definition["inputs"]
    input_names = [spec["name"] for spec in inputs]

    def op(*args, name=None, **kwargs):
        args = list(args)
        for spec in inputs[len(args):]:
            if spec["name"] in kwargs:
                args.append(kwargs.pop(spec["name"]))
        if len(args) != len(inputs):
            raise TypeError(f"{op_name} takes {len(inputs)} inputs ({', '.join(input_names) or 'none'}), "
                            f"got {len(args)}")
        flat = []
        for spec, value in zip(inputs, args):
            if spec["is_list"]:
                if not isinstance(value, (list, tuple)):
                    raise TypeError(f"{op_name}: input '{spec['name']}' is a list of tensors")
                flat.append([_input(v) for v in value])
            else:
                flat.append(_input(value))
        return _results(_dflow.add_op(_scope(name), op_name, flat, kwargs))

    attrs = "".join(f"\n  {a['name']}: {a['type']}{' (required)' if a['required'] else ''}"
                    for a in definition["attrs"])
    op.__name__ = op.__qualname__ = op_name
    op.__doc__ = f"{definition['signature']}\n\n{definition['doc']}" + (f"\n\nattrs:{attrs}" if attrs else "")
    return op


ops = types.ModuleType("dflow.ops", "Every op of the registry, by its TensorFlow name.")
for _definition in _dflow.op_defs():
    setattr(ops, _definition["name"], _make_op(_definition))


def placeholder(dtype, shape=None, name=None):
    """A value fed at run time; `shape` may hold None for unknown dims."""
    return _dflow.placeholder(_scope(name), dtype, None if shape is None else list(shape))


def constant(value, dtype=None, name=None):
    return _dflow.constant(_scope(name), _literal(value, dtype))


def Variable(initial_value, name=None, dtype=None):  # noqa: N802 (TensorFlow's name)
    """A variable initialised by global_variables_initializer() to `initial_value`
    (a value, or an Output such as a random op's)."""
    initial = initial_value if isinstance(initial_value, Output) else _literal(initial_value, dtype)
    return _dflow.variable(_scope(name), initial)


def global_variables_initializer(name=None):
    return _dflow.global_variables_initializer(_scope(name))


def trainable_variables():
    return _dflow.trainable_variables(_scope())


def gradients(ys, xs, grad_ys=None):
    """d(sum of ys)/dx for each x: an Output, or None where no path leads from x to ys."""
    ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
    single = not isinstance(xs, (list, tuple))
    xs = [xs] if single else list(xs)
    grad_ys = [] if grad_ys is None else (list(grad_ys) if isinstance(grad_ys, (list, tuple)) else [grad_ys])
    grads = _dflow.gradients(_scope(), ys, xs, grad_ys)
    return grads[0] if single else grads


class Session:
    """Runs the default graph (or `graph`): in this process on `devices`
    (["/device:GPU:0"]; default: the host CPU), or on the cluster at
    `target` ("zmq://host:port")."""

    def __init__(self, graph=None, target="", num_threads=0, devices=(),
                 allow_soft_placement=False):
        self.graph = graph or get_default_graph()
        self._session = _dflow.Session(self.graph._scopes[0], num_threads=num_threads,
                                       target=target, devices=list(devices),
                                       allow_soft_placement=allow_soft_placement)

    def run(self, fetches, feed_dict=None):
        """Values of `fetches` (an Output, a tensor name, an Operation to run
        for its effect, or a list, tuple or dict of those) as numpy arrays
        (numpy scalars for rank 0), feeding `feed_dict` {Output or name: value};
        a value that is not a numpy array takes its tensor's dtype."""
        return _run(self._session, self.graph, fetches, feed_dict)

    def close(self):
        self._session = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _run(session, graph, fetches, feed_dict):
    """Session.run's conversions around `session`, a C++ session handle that runs `graph`."""
    if isinstance(fetches, dict):
        values = _run(session, graph, list(fetches.values()), feed_dict)
        return dict(zip(fetches.keys(), values))
    single = not isinstance(fetches, (list, tuple))
    items = [fetches] if single else list(fetches)
    tensors = [f for f in items if not isinstance(f, Operation)]
    targets = [f for f in items if isinstance(f, Operation)]
    feeds = [(key, _feed_value(graph, key, value)) for key, value in (feed_dict or {}).items()]
    values = iter(session.run(tensors, feeds, targets))
    results = [None if isinstance(f, Operation) else _unwrap(next(values)) for f in items]
    return results[0] if single else type(fetches)(results) if isinstance(fetches, tuple) else results


def _tensor(graph, name):
    """The Output that a tensor name ("x", "x:1") names in `graph`."""
    node, _, index = name.partition(":")
    return graph.get_operation_by_name(node).output(int(index or 0))


def _feed_value(graph, key, value):
    """A numpy array as it is; anything else in the dtype of the tensor that
    `key` (an Output, or a name in `graph`) names."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(key, str):
        key = _tensor(graph, key)
    if isinstance(key, Output):
        return np.asarray(value, dtype=key.dtype.as_numpy_dtype)
    return np.asarray(value)


def _unwrap(array):
    return array[()] if array.ndim == 0 else array


class _Optimizer:
    """Minimize(loss) adds the gradients and one update op per variable and
    returns the training Operation, as TensorFlow 1's optimizers do."""

    def __init__(self, kind, learning_rate, **options):
        self._kind, self._learning_rate, self._options = kind, learning_rate, options

    def minimize(self, loss, var_list=None):
        scope = _scope()
        optimizer = _dflow.Optimizer(self._kind, self._learning_rate_output(scope), self._options)
        return optimizer.minimize(scope, loss, list(var_list or []))

    def _learning_rate_output(self, scope):
        lr = self._learning_rate
        return lr if isinstance(lr, Output) else _dflow.constant_learning_rate(scope, float(lr))


def _gradient_descent(learning_rate, weight_decay=0.0, clip_global_norm=0.0):
    return _Optimizer("GradientDescent", learning_rate, weight_decay=weight_decay,
                      clip_global_norm=clip_global_norm)


def _momentum(learning_rate, momentum, use_nesterov=False, weight_decay=0.0, clip_global_norm=0.0):
    return _Optimizer("Momentum", learning_rate, momentum=momentum, use_nesterov=use_nesterov,
                      weight_decay=weight_decay, clip_global_norm=clip_global_norm)


def _adam(learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, weight_decay=0.0,
          clip_global_norm=0.0):
    return _Optimizer("Adam", learning_rate, beta1=beta1, beta2=beta2, epsilon=epsilon,
                      weight_decay=weight_decay, clip_global_norm=clip_global_norm)


class _Saver:
    """Writes and restores variables as safetensors checkpoints (the C++ Saver's files)."""

    def __init__(self, var_list=None, max_to_keep=5):
        self._saver = _dflow.Saver(_scope(), list(var_list or []), max_to_keep=max_to_keep)

    def save(self, sess, save_path, global_step=None):
        return self._saver.save(sess._session, save_path, global_step)

    def restore(self, sess, save_path):
        self._saver.restore(sess._session, save_path)


def _cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0):
    """learning_rate * ((1 - alpha) * (1 + cos(pi * min(step, decay_steps) / decay_steps)) / 2 + alpha)."""
    return _dflow.cosine_decay(_scope(), float(learning_rate), global_step, int(decay_steps), float(alpha))


train = types.ModuleType("dflow.train", "Optimizers, learning-rate schedules and checkpoints.")
train.get_or_create_global_step = lambda: _dflow.global_step(_scope())
train.cosine_decay = _cosine_decay
train.GradientDescentOptimizer = _gradient_descent
train.MomentumOptimizer = _momentum
train.AdamOptimizer = _adam
train.Saver = _Saver
train.latest_checkpoint = _dflow.latest_checkpoint


layers = types.ModuleType("dflow.layers", "The C++ models/ layers: variables with initialisers, "
                          "made under a name scope.")


def _dense(inputs, units, activation=None, name="dense", seed=0):
    """activation(inputs kernel + bias): kernel "<name>/kernel" [in, units]
    He-normal (truncated), bias "<name>/bias" zeros; returns the output."""
    output, _, _ = _dflow.dense(_scope().new_sub_scope(name), inputs, int(units), activation or "", int(seed))
    return output


def _conv2d(inputs, filters, kernel_size, strides=1, padding="same", groups=1, use_bias=True,
            activation=None, name="conv2d"):
    """A convolution layer over NHWC inputs: padding "same" or a number of
    zeros on every side (PyTorch's padding=p); He-normal filter, zero bias."""
    pad = -1 if padding == "same" else int(padding)
    output, _, _ = _dflow.conv2d(_scope().new_sub_scope(name), inputs, int(filters), int(kernel_size),
                                 int(strides), pad, int(groups), bool(use_bias), activation or "")
    return output


def _batch_norm(inputs, training=True, momentum=0.1, epsilon=1e-5, name="batch_norm"):
    """Batch normalisation over the channels of NHWC inputs; returns (output,
    the moving-average updates to run with each training step)."""
    return _dflow.batch_norm(_scope().new_sub_scope(name), inputs, bool(training), float(momentum),
                             float(epsilon))


layers.dense, layers.conv2d, layers.batch_norm = _dense, _conv2d, _batch_norm

data = types.ModuleType("dflow.data", "Generated datasets.")
data.spirals = lambda points_per_class=1000, classes=3, noise=0.1, seed=1: _dflow.spirals(
    int(points_per_class), int(classes), float(noise), int(seed))
data.spirals.__doc__ = ("(points float32 [n, 2], labels int32 [n]): `classes` interleaved spiral arms "
                        "(the C++ models::MakeSpirals)")


def _binary(op, reverse=False):
    def method(self, other):
        return op(other, self) if reverse else op(self, other)
    return method


Output.__add__, Output.__radd__ = _binary(ops.Add), _binary(ops.Add, True)
Output.__sub__, Output.__rsub__ = _binary(ops.Sub), _binary(ops.Sub, True)
Output.__mul__, Output.__rmul__ = _binary(ops.Mul), _binary(ops.Mul, True)
Output.__truediv__, Output.__rtruediv__ = _binary(ops.Div), _binary(ops.Div, True)
Output.__matmul__, Output.__rmatmul__ = _binary(ops.MatMul), _binary(ops.MatMul, True)
Output.__neg__ = lambda self: ops.Neg(self)

from . import distribute  # noqa: E402 (it builds on the names above)
