"""Plan graphs: Spark's node numbering, clusters, reused exchanges, and the Scala set order."""

from __future__ import annotations

from eventlog_samples import public

from analyzer import api
from analyzer.replay.scala_set import ScalaIntSet


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

    from analyzer.model.plan import MetricDef, PlanNode

    metric = MetricDef(name="rows", accumulator_id=7, metric_type="sum")
    assert MetricDef.typed("rows", 7, "sum") == metric
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
