"""Data-parallel training across the processes `dflow launch` starts
(Horovod's model, or parameter servers): dflow.distribute of the dflow
package."""
from . import DflowError, Session, _dflow, _graphs, _Optimizer, _run, _scope, get_default_graph

class DistributedOptimizer:
    """Horovod's DistributedOptimizer: wraps an optimizer of dflow.train so
    that minimize() averages the gradients over the workers of the job that
    `dflow launch` started this process in before applying them: in the
    graph with the ring all-reduce, or on the ps tasks, which then hold the
    variables, with parameter servers (`--ps P`). Alone, a process is a job
    of one worker. A dflow.distribute.TrainingSession runs the steps under
    either strategy; with the ring, a plain Session does too:

        opt = dflow.distribute.DistributedOptimizer(dflow.train.AdamOptimizer(0.01))
        train = opt.minimize(loss)
        init = dflow.global_variables_initializer()
        sync = opt.broadcast_variables()  # every worker starts from the chief's values
        sess.run(init); sess.run(sync)
        for ...: sess.run(train, {x: this_workers_batch, ...})
        opt.finish()
    """

    def __init__(self, optimizer):
        if not isinstance(optimizer, _Optimizer):
            raise TypeError("DistributedOptimizer wraps an optimizer of dflow.train, got " + type(optimizer).__name__)
        self._optimizer = optimizer
        self._handle = None
        self.rank, self.size = _dflow.worker_place()

    def minimize(self, loss, var_list=None):
        if self._handle is not None:
            raise DflowError("a DistributedOptimizer minimizes one loss (its workers agree on its gradients)")
        scope = _scope()
        o = self._optimizer
        self._handle = _dflow.DistributedOptimizer(o._kind, o._learning_rate_output(scope), o._options)
        _graphs[-1]._keep.append(self._handle)  # the graph's ops reach it while the graph lives
        return self._handle.minimize(scope, loss, list(var_list or []))

    def broadcast_variables(self):
        """An Operation that gives every variable built so far the chief's value."""
        return self._ready().broadcast_variables(_scope())

    def any_worker(self, flag):
        """True on every worker when `flag` is true on any (between steps)."""
        return self._ready().any_worker(bool(flag))

    def finish(self):
        """After the last step: waits for every worker, so none cuts another's last step off."""
        self._ready().finish()

    def _ready(self):
        if self._handle is None:
            raise DflowError("call minimize() first")
        return self._handle


class TrainingSession:
    """Runs a DistributedOptimizer's training steps under the strategy `dflow
    launch` chose, ring all-reduce or parameter servers (TensorFlow 1's
    MonitoredTrainingSession): the chief initialises the variables (and
    restores `restore_from`, a checkpoint, if given), every worker starts from
    the chief's values, and run() takes one training step.

        dflow.distribute.serve_if_parameter_server()   # first: a ps task serves, then exits
        ...build the model...
        opt = dflow.distribute.DistributedOptimizer(dflow.train.AdamOptimizer(0.01))
        opt.minimize(loss)
        with dflow.distribute.TrainingSession(opt, num_steps=600) as sess:
            while not sess.should_stop():
                loss_value = sess.run(loss, this_workers_batch(sess.next_step))
            sess.close()                     # every worker's steps are done
            if sess.is_chief:
                dflow.train.Saver(sess.variables).save(sess.session, "run/")

    `num_threads` sets the ring's session threads (the ps strategy's worker
    runs on one)."""

    def __init__(self, optimizer, num_steps, restore_from=None, num_threads=0):
        if not isinstance(optimizer, DistributedOptimizer):
            raise TypeError("TrainingSession runs a dflow.distribute.DistributedOptimizer's steps, got "
                            + type(optimizer).__name__)
        self.graph = get_default_graph()
        self._handle = _dflow.TrainingSession(optimizer._ready(), _scope(), int(num_steps), restore_from or "",
                                              int(num_threads))

    def run(self, fetches, feed_dict=None):
        """One training step on `feed_dict`, this worker's batch; returns the
        values of `fetches` (as Session.run does; Operations are refused)."""
        return _run(self._handle, self.graph, fetches, feed_dict)

    def should_stop(self):
        """True once the job took num_steps global steps."""
        return self._handle.should_stop()

    global_step = property(lambda self: self._handle.global_step, doc="The global step the next run() trains.")
    next_step = property(lambda self: self._handle.next_step,
                         doc="Which batch the next run() wants: the global step (asynchronous parameter "
                             "servers: this worker's own count).")
    rank = property(lambda self: self._handle.worker)
    size = property(lambda self: self._handle.num_workers)
    is_chief = property(lambda self: self._handle.worker == 0)
    variables = property(lambda self: self._handle.variables,
                         doc="What a checkpoint holds: the model's variables, optimizer slots, global step.")

    @property
    def session(self):
        """A Session over the trained variables, to evaluate and checkpoint."""
        session = Session.__new__(Session)
        session.graph, session._session = self.graph, self._handle.session
        return session

    def close(self):
        """After the last step: tells the job this worker is done and waits for
        every worker. The variables stay readable until the session goes."""
        self._handle.close()

    def __enter__(self):
        return self

    def __exit__(self, kind, *exc):
        # The chief's C++ session stops the ps tasks as it goes (after an
        # exception, telling the other workers training failed).
        if kind is None:
            self.close()
        self._handle = None


def serve_if_parameter_server():
    """In a ps task `dflow launch --ps P` started: serves the variables until
    the chief stops the task, then exits the process with the task's code.
    Elsewhere it returns at once. Call it before building the model."""
    code = _dflow.serve_if_parameter_server()
    if code is not None:
        raise SystemExit(code)


def rank():
    """This worker's index in the job (0 alone)."""
    return _dflow.worker_place()[0]


def size():
    """The job's number of workers (1 alone)."""
    return _dflow.worker_place()[1]
