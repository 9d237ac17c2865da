"""Beam's Dask runner with three upstream defects worked around (apache-beam 2.77, `apache_beam.runners.dask`).

Each loses rows silently, so a stage on the plain runner can exit 0 with empty outputs (seen: assemble wrote 0 rows):
1. Only the last transform's bag is computed. `DaskRunner.run_pipeline` computes `list(visitor.bags.values())[-1]`,
   assuming every branch feeds the last transform; a pipeline with several sinks (outputs, rejects, counts) runs
   one of them. Here every leaf bag (a transform no other transform reads) is computed.
2. A multi-output ParDo's outputs are mixed. Its bundle function returns the main and the tagged outputs in one
   list, without their tags, and the visitor hands that whole bag to the consumer of any one output. Here tagged
   outputs keep their tags (`_run_bundle`) and a consumer gets only its own tag's elements (`_Visitor._bag_of`).
3. Outputs a DoFn emits in `finish_bundle` (ours flush their worker threads there) are dropped: the bundle's
   results are taken before `finish_bundle` runs. `_run_bundle` takes them after.
And one that costs time: a side input is a Dask bag that each bundle iterates, which computes the side input's whole
upstream graph again inside every task that reads it (assemble read its rollouts twice and assembled every bucket
twice). Here
a side input is one task's result that Dask hands to every bundle (`_side_values`).
Everything else is Beam's: the same translations for the other transforms, options and result.

Two things a stage's driver has and remote workers lack are carried over: its working directory (params name folders
relative to the DVC project, such as a judge's `models/policy`; a bundle runs there when the worker sees that folder,
that is when the project is on a mount every worker shares), its offline settings (`OFFLINE_ENV`: nothing may
download weights on a worker either) and its FileSystems options (`_DriverSettings`: an s3:// endpoint, a region).
"""

import os
from functools import partial

import apache_beam
from apache_beam import pvalue
from apache_beam.pipeline import PipelineVisitor
from apache_beam.runners.common import DoFnContext, DoFnInvoker, DoFnSignature, _OutputHandler
from apache_beam.transforms.sideinputs import SideInputMap

from rewardmill.transforms.errors import UserError

try:  # Dask is the `dask` extra: `make install` does not bring it
    from apache_beam.runners.dask import dask_runner as upstream
    from apache_beam.runners.dask import overrides as upstream_overrides
    from apache_beam.runners.dask import transform_evaluator as ops
    from distributed import WorkerPlugin
except ModuleNotFoundError as missing:
    if missing.name not in ("dask", "distributed") and not (missing.name or "").startswith("dask."):
        raise
    raise UserError(
        f"beam.runner DaskRunner needs Dask ({missing.name} is not installed): install the dask extra with "
        "`.venv/bin/pip install -c requirements.lock -e '.[dask]'` (make dev has it)"
    ) from missing


def _is_tag(item, tag) -> bool:
    """Whether a bag item of a multi-output ParDo belongs to the output `tag` (None = the main output)."""
    if isinstance(item, pvalue.TaggedOutput):
        return item.tag == tag
    return tag is None


def _untag(item):
    return item.value if isinstance(item, pvalue.TaggedOutput) else item


OFFLINE_ENV = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "TOKENIZERS_PARALLELISM")


class _DriverSettings(WorkerPlugin):
    """A Dask worker plugin: the driver's offline env and Beam FileSystems' options (an s3:// endpoint, region,
    credentials given as options), set on every worker, including ones that join later."""

    name = "rewardmill-driver-settings"  # registering again (the next stage) replaces it

    def __init__(self, env: dict[str, str], options: dict):
        self.env = env
        self.options = options  # the pipeline's options that differ from Beam's defaults

    def setup(self, worker=None) -> None:
        from apache_beam.io.filesystems import FileSystems
        from apache_beam.options.pipeline_options import PipelineOptions

        os.environ.update(self.env)
        FileSystems.set_options(PipelineOptions.from_dictionary(self.options))


def _is_daemon() -> bool:
    import multiprocessing

    return multiprocessing.current_process().daemon


class DaskSetupError(SystemExit):
    """The cluster cannot run the stage; says what to change. Raised before any work."""


def connect(dask_options: dict):
    """A client of the cluster the options name (a new local one when none is named), checked: reachable, and its
    workers may start child processes (math-verify's timeout helper needs one; Dask starts workers as daemonic
    processes, which may not)."""
    import dask
    import dask.distributed as ddist

    where = dask_options.get("address") or dask_options.get("scheduler_file") or "a new local cluster"
    try:
        with dask.config.set({"distributed.worker.daemon": False}):  # a local cluster the client starts itself
            client = ddist.Client(**dask_options)
    except (OSError, TimeoutError, ValueError) as exc:
        raise DaskSetupError(
            f"beam.runner DaskRunner: cannot reach the Dask scheduler at {where} ({type(exc).__name__}: {exc}). Start "
            "it (`dask scheduler`) or fix beam.dask_client_address / beam.dask_scheduler_file"
        ) from exc
    daemonic = sorted(w for w, daemon in client.run(_is_daemon).items() if daemon)
    if daemonic:
        client.close()
        raise DaskSetupError(
            f"beam.runner DaskRunner: workers {daemonic} of {where} are daemonic processes, which cannot start child "
            "processes (math-verify's timeout helper needs one). Start them with "
            "DASK_DISTRIBUTED__WORKER__DAEMON=False in their environment (or dask.config.set("
            "{'distributed.worker.daemon': False}) before a LocalCluster)"
        )
    return client


def _side_values(*partitions) -> list:
    """A side input's elements, from all its partitions (computed once, then passed to every bundle)."""
    return [item for partition in partitions for item in partition]


class _Windowed:
    """A side input's elements as the windowed values SideInputMap iterates."""

    def __init__(self, values: list, window_fn):
        self.values = values
        self.window_fn = window_fn

    def __iter__(self):
        for value in self.values:
            yield ops.get_windowed_value(value, self.window_fn)


def _run_bundle(items, spec, *side_values):
    """One Dask partition through a DoFn, setup to teardown, in the driver's working directory when this worker
    sees it: main outputs as plain values, tagged ones as TaggedOutput(tag, value); everything emitted,
    `finish_bundle` included. `side_values`: each side input's elements, in the order of the spec's side inputs."""
    fn, args, kwargs, label, window_fn, sides, cwd = spec
    if os.path.isdir(cwd):
        os.chdir(cwd)
    side_inputs = [
        SideInputMap(view, options, _Windowed(values, mapping_fn))
        for (view, options, mapping_fn), values in zip(sides, side_values, strict=True)
    ]
    receivers = ops.OneReceiver()  # a fresh one per bundle: nothing carries over between partitions
    handler = _OutputHandler(
        window_fn=window_fn,
        main_receivers=receivers[None],
        tagged_receivers=receivers,
        per_element_output_counter=None,
        output_batch_converter=None,
        process_yields_batches=False,
        process_batch_yields_elements=False,
    )
    invoker = DoFnInvoker.create_invoker(
        DoFnSignature(fn),
        handler,
        context=DoFnContext(label, state=None),
        side_inputs=side_inputs,
        input_args=args,
        input_kwargs=kwargs,
        user_state_context=None,
        bundle_finalizer_param=apache_beam.DoFn.BundleFinalizerParam(),
    )
    invoker.invoke_setup()
    invoker.invoke_start_bundle()
    for item in items:
        invoker.invoke_process(item)
    invoker.invoke_finish_bundle()
    invoker.invoke_teardown()
    return [
        pvalue.TaggedOutput(out.tag, out.value.value) if isinstance(out, pvalue.TaggedOutput) else out.value
        for out in receivers.values
    ]


class _ParDo(ops.DaskBagOp):
    """ParDo as Beam translates it, through `_run_bundle`."""

    def apply(self, input_bag, side_inputs=None):
        """`side_inputs`: (Beam side input, its bag) pairs."""
        import dask

        transform = self.transform
        args, kwargs = transform.raw_side_inputs
        main_input = next(iter(self.applied.main_inputs.values()))
        window_fn = main_input.windowing.windowfn if hasattr(main_input, "windowing") else None
        sides = [(type(si), si._view_options(), si._window_mapping_fn) for si, _ in side_inputs or []]
        # the side input's own keys (optimize_graph=False): an optimized copy would compute its upstream graph again
        values = [dask.delayed(_side_values)(*bag.to_delayed(optimize_graph=False)) for _, bag in side_inputs or []]
        spec = (transform.fn, list(args), kwargs, transform.label, window_fn, sides, os.getcwd())
        return input_bag.map(ops.get_windowed_value, window_fn).map_partitions(_run_bundle, spec, *values)


class _GroupByKey(ops.DaskBagOp):
    """GroupByKey as Beam translates it, into at least `partitions` partitions (the visitor sets it from the cluster's
    threads): Beam's keeps its input's partition count, which for a few large groups (assemble's buckets) is a few
    partitions, so a few workers did all the work."""

    partitions = 1

    def apply(self, input_bag, side_inputs=None):
        if input_bag.npartitions < self.partitions:  # a task shuffle keeps its input's partition count
            input_bag = input_bag.repartition(npartitions=self.partitions)
        return ops.GroupByKey(self.applied, bag_kwargs=self.bag_kwargs).apply(input_bag)


class _Create(ops.DaskBagOp):
    """Create as Beam translates it, but one partition per element up to `partitions` when no partition option is
    given: our Creates list a few heavy items (shard paths), which Beam's default of 128 items per partition read one
    after another in one task."""

    partitions = 1

    def apply(self, input_bag, side_inputs=None):
        import dask.bag as db

        if self.bag_kwargs.get("npartitions") or self.bag_kwargs.get("partition_size"):
            return ops.Create(self.applied, bag_kwargs=self.bag_kwargs).apply(input_bag)
        items = self.transform.values
        return db.from_sequence(items, npartitions=max(1, min(len(items), self.partitions)))


TRANSLATIONS = {
    **ops.TRANSLATIONS,
    apache_beam.ParDo: _ParDo,
    upstream_overrides._GroupByKeyOnly: _GroupByKey,
    upstream_overrides._Create: _Create,
}


class _Visitor(PipelineVisitor):
    """Translates every transform to a Dask bag (Beam's `TRANSLATIONS`); inputs are selected by output tag."""

    def __init__(self, bag_kwargs: dict, group_partitions: int = 1):
        self.bag_kwargs = bag_kwargs
        self.group_partitions = group_partitions
        self.bags: dict = {}
        self.read: set = set()  # transforms whose bag another transform consumes

    def _bag_of(self, value):
        producer = value.producer
        self.read.add(producer)
        bag = self.bags[producer]
        if len(producer.outputs) > 1:  # a multi-output ParDo: keep this output's elements (main: tag None)
            bag = bag.filter(partial(_is_tag, tag=value.tag)).map(_untag)
        return bag

    def visit_transform(self, node) -> None:
        op = TRANSLATIONS.get(node.transform.__class__, ops.NoOp)(node, bag_kwargs=self.bag_kwargs)
        if isinstance(op, _GroupByKey | _Create):
            op.partitions = self.group_partitions
        kwargs = {"input_bag": None, "side_inputs": None}
        inputs = [self._bag_of(v) for v in node.inputs if not isinstance(v, pvalue.PBegin)]
        if inputs:  # a root transform (Create, Impulse) reads nothing
            single = len(inputs) == 1 and not isinstance(op, ops.Flatten)
            kwargs["input_bag"] = inputs[0] if single else inputs
        if node.side_inputs:
            kwargs["side_inputs"] = [(si, self._bag_of(si.pvalue)) for si in node.side_inputs]
        self.bags[node] = op.apply(**kwargs)

    def leaves(self) -> list:
        return [bag for node, bag in self.bags.items() if node not in self.read and bag is not None]


class DaskRunner(upstream.DaskRunner):
    """`beam.runner: DaskRunner`. See the module docstring for what differs from Beam's."""

    @staticmethod
    def to_dask_bag_visitor(bag_kwargs=None, group_partitions: int = 1) -> PipelineVisitor:
        return _Visitor(bag_kwargs or {}, group_partitions)

    def run_pipeline(self, pipeline, options):
        dask_options = options.view_as(upstream.DaskOptions).get_all_options(drop_default=True, current_only=True)
        bag_kwargs = upstream.DaskOptions._extract_bag_kwargs(dask_options)
        client = connect(dask_options)
        env = {k: os.environ[k] for k in OFFLINE_ENV if k in os.environ}
        client.register_plugin(_DriverSettings(env, options.get_all_options(drop_default=True)))
        pipeline.replace_all(upstream.dask_overrides())
        # groups and created items spread over 4 partitions per worker thread: a few large ones still land on
        # different workers
        visitor = self.to_dask_bag_visitor(bag_kwargs, 4 * sum(client.nthreads().values()))
        pipeline.visit(visitor)
        # one graph for every sink, optimized together (optimizing each sink's graph apart, as dask.optimize does,
        # fuses a shared step differently per sink, and the scheduler then sees one key with two specs)
        futures = client.compute(visitor.leaves(), optimize_graph=True)
        return upstream.DaskRunnerResult(client, futures)
