"""Plan graphs: Spark's node numbering, clusters, reused exchanges, and the Scala set order."""

from __future__ import annotations

from eventlog_samples import REPO, public

from analyzer import api
from analyzer.replay.scala_set import ScalaIntSet

STREAM_SAMPLE = REPO / "sample_eventlogs" / "local-1795622139339.zstd"
"""A real streaming run: ten micro-batches of one query, two SQL executions each."""


def test_scala_set_keeps_insertion_order_up_to_four() -> None:
    s = ScalaIntSet()
    s.add_all([7, 3, 9])
    s.add_all([3, 1])
    assert s.ordered() == [7, 3, 9, 1]


def test_scala_set_iterates_as_a_champ_trie_beyond_four() -> None:
    s = ScalaIntSet()
    s.add_all(range(10))
    assert s.ordered() == [0, 5, 1, 6, 9, 2, 7, 3, 8, 4]


def test_graph_of_an_aqe_log_has_clusters_and_exchanges() -> None:
    analysis = api.analyze(str(public("local-1642039451826")))
    graph = analysis.application.executions[0].final_plan.graph
    names = [n.name for n in graph.nodes]
    assert names[0] == "AdaptiveSparkPlan"
    clusters = [n for n in graph.nodes if n.is_cluster]
    assert [c.name for c in clusters] == [
        "WholeStageCodegen (3)",
        "WholeStageCodegen (2)",
        "WholeStageCodegen (1)",
    ]
    for cluster in clusters:
        for member in cluster.member_ids:
            assert graph.node(member).cluster_id == cluster.node_id
    # Every edge goes from a child to its parent, and the tree walk reaches every operator.
    walked = {n.node_id for n, _, _ in graph.walk()}
    assert walked == {n.node_id for n in graph.nodes if not n.is_cluster}
    assert "Range" in graph.to_s()


def test_reused_exchange_becomes_an_edge_not_a_node() -> None:
    analysis = api.analyze(str(public("nds_q72_dataproc_2_2.zstd")))
    for execution in analysis.application.executions:
        graph = execution.final_plan.graph
        for node in graph.nodes:
            if "Exchange" in node.name and len(graph.parents_of(node.node_id)) > 1:
                return
    raise AssertionError("expected an exchange consumed twice (a reused exchange)")


def test_typed_plan_parts_equal_validated_ones() -> None:
    """The replay's unvalidated constructors set every field, as the validated ones would."""
    import dataclasses

    from analyzer.model.plan import MetricDef, MetricSpec, PlanNode

    assert MetricDef.typed("rows", 7, "sum") == MetricDef(
        name="rows", accumulator_id=7, metric_type="sum"
    )
    metric = MetricSpec(name="rows", metric_type="sum")
    assert MetricSpec.typed("rows", "sum") == metric
    fields = {
        "node_id": 3,
        "name": "Scan",
        "desc": "Scan parquet",
        "metrics": (metric,),
        "is_cluster": False,
        "cluster_id": 1,
        "codegen_id": 2,
        "member_ids": (4, 5),
        "metadata": (("Location", "s3://x"),),
    }
    assert [f.name for f in dataclasses.fields(PlanNode)] == list(fields)
    assert PlanNode.typed(**fields) == PlanNode(**fields)  # type: ignore[arg-type]


def test_runs_of_a_repeated_query_share_their_plan_and_keep_their_own_ids() -> None:
    """Every micro-batch of a stream logs the same plan with new accumulator ids (and its own
    epoch and plan id in two texts): the nodes are one object for all runs where their texts
    agree, and each run's graph gives its own ids, as logged."""
    analysis = api.analyze(str(STREAM_SAMPLE))
    graphs = [e.final_plan.graph for e in analysis.application.executions]
    assert len(graphs) == 20
    distinct = {id(n) for g in graphs for n in g.nodes}
    assert len(distinct) < sum(len(g.nodes) for g in graphs) / 5
    first, second = graphs[0], graphs[-1]  # the first and the last micro-batch
    node_id = next(n.node_id for n in first.nodes if n.name == "MicroBatchScan")
    assert first.node(node_id) is second.node(node_id)
    ids_first = first.accumulator_ids(node_id)
    ids_second = second.accumulator_ids(node_id)
    assert len(ids_first) == len(first.node(node_id).metrics) > 0
    assert not set(ids_first) & set(ids_second)
    # The graph's metrics pair the node's names and types with the run's ids.
    assert [(m.name, m.accumulator_id) for m in second.metrics(node_id)] == [
        (spec.name, acc_id)
        for spec, acc_id in zip(second.node(node_id).metrics, ids_second, strict=True)
    ]


def test_a_plan_logged_again_is_read_from_its_shape() -> None:
    """A plan whose encoding less its accumulator ids was seen before takes that plan's shape and
    reads only its ids: the graph is the one a fresh build gives, with the new ids in place."""
    import re

    import msgspec

    from analyzer.eventlog.app_events import SparkPlanInfo
    from analyzer.eventlog.events import EventReader, SQLAdaptiveExecutionUpdate
    from analyzer.eventlog.source import resolve_log
    from analyzer.replay.plan_graph import PlanParts, build_plan_graph

    # The largest plan of a real AQE run (reused exchanges, subqueries, codegen clusters).
    plans = [
        e.plan.plan()
        for e in EventReader(resolve_log(str(public("nds_q72_dataproc_2_2.zstd"))))
        if isinstance(e, SQLAdaptiveExecutionUpdate) and e.plan is not None
    ]
    plan = max(plans, key=lambda p: len(msgspec.json.encode(p)))
    parts = PlanParts()
    built, specs = build_plan_graph(plan, parts)
    ids = list(built.all_accumulator_ids)
    assert len(ids) == len(specs) > 50
    # The same plan as a later run logs it: every accumulator id moved by the same amount.
    moved = msgspec.json.decode(
        re.sub(
            rb'"accumulatorId":([0-9]+)',
            lambda m: b'"accumulatorId":%d' % (int(m.group(1)) + 1_000_000),
            msgspec.json.encode(plan),
        ),
        type=SparkPlanInfo,
    )
    again, again_specs = build_plan_graph(moved, parts)
    assert again.nodes is built.nodes and again.edges is built.edges and again_specs is specs
    assert list(again.all_accumulator_ids) == [i + 1_000_000 for i in ids]
    fresh, _ = build_plan_graph(moved, PlanParts())
    assert fresh.model_dump_json() == again.model_dump_json()
    # Ids that do not keep the first run's pattern (even and odd ones moved apart) are kept
    # as they are.
    scattered = msgspec.json.decode(
        re.sub(
            rb'"accumulatorId":([0-9]+)',
            lambda m: b'"accumulatorId":%d' % (int(m.group(1)) * 3 + int(m.group(1)) % 2),
            msgspec.json.encode(plan),
        ),
        type=SparkPlanInfo,
    )
    apart, _ = build_plan_graph(scattered, parts)
    assert apart.nodes is built.nodes
    assert list(apart.all_accumulator_ids) == [i * 3 + i % 2 for i in ids]
    assert [list(apart.accumulator_ids(n.node_id)) for n in apart.nodes] == [
        [i * 3 + i % 2 for i in built.accumulator_ids(n.node_id)] for n in built.nodes
    ]
    # The model's JSON gives every node's metrics with their ids, as `MetricDef`s.
    dumped = msgspec.json.decode(again.model_dump_json())
    assert [
        (m["name"], m["accumulator_id"], m["metric_type"])
        for n in dumped["nodes"]
        for m in n["metrics"]
    ] == [
        (m.name, m.accumulator_id, m.metric_type)
        for n in again.nodes
        for m in again.metrics(n.node_id)
    ]
