"""Compare our JSON report of a log with the History Server's SQL REST API for the same log."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

_ANNOTATION = re.compile(r" \((?:stage \d+\.\d+: task \d+|driver)\)\)?$")


def strip_annotation(value: str) -> str:
    """Remove the `(stage X.Y: task Z)` / `(driver)` part of a metric string."""
    return re.sub(r" \((?:stage \d+\.\d+: task \d+|driver)\)", "", value)


@dataclass
class Comparison:
    """Counts and examples of agreement between our report and the oracle."""

    n_executions: int = 0
    n_nodes: int = 0
    n_metrics: int = 0
    numeric_diffs: list[str] = field(default_factory=list)
    annotation_diffs: list[str] = field(default_factory=list)
    structure_diffs: list[str] = field(default_factory=list)

    def merge(self, other: Comparison) -> None:
        """Add another comparison's counts and differences to this one."""
        self.n_executions += other.n_executions
        self.n_nodes += other.n_nodes
        self.n_metrics += other.n_metrics
        self.numeric_diffs += other.numeric_diffs
        self.annotation_diffs += other.annotation_diffs
        self.structure_diffs += other.structure_diffs

    def summary(self) -> str:
        """One line of counts."""
        return (
            f"{self.n_executions} executions, {self.n_nodes} nodes, {self.n_metrics} metric "
            f"strings; {len(self.structure_diffs)} structure, {len(self.numeric_diffs)} numeric, "
            f"{len(self.annotation_diffs)} annotation-only differences"
        )


def compare_app(app: str, ours: dict[str, Any], oracle: list[dict[str, Any]]) -> Comparison:
    """Compare every execution the oracle shows with ours: nodes, edges and metric strings."""
    result = Comparison()
    by_id = {e["execution_id"]: e for e in ours["executions"]}
    for rest in oracle:
        where = f"{app} exec {rest['id']}"
        mine = by_id.get(rest["id"])
        if mine is None:
            result.structure_diffs.append(f"{where}: missing execution")
            continue
        result.n_executions += 1
        my_nodes = {n["node_id"]: n for n in mine["nodes"]}
        rest_ids = [n["nodeId"] for n in rest["nodes"]]
        if sorted(rest_ids) != sorted(my_nodes):
            result.structure_diffs.append(
                f"{where}: node ids {sorted(rest_ids)} != {sorted(my_nodes)}"
            )
        rest_edges = [(e["fromId"], e["toId"]) for e in rest["edges"]]
        my_edges = [(e["from_id"], e["to_id"]) for e in mine["edges"]]
        if rest_edges != my_edges:
            result.structure_diffs.append(f"{where}: edges {rest_edges} != {my_edges}")
        for node in rest["nodes"]:
            result.n_nodes += 1
            n = my_nodes.get(node["nodeId"])
            if n is None:
                continue
            label = f"{where} node {node['nodeId']} {node['nodeName']}"
            if n["name"] != node["nodeName"].strip():
                result.structure_diffs.append(f"{label}: name {n['name']!r}")
            if n["codegen_id"] != node.get("wholeStageCodegenId"):
                result.structure_diffs.append(
                    f"{label}: codegen id {n['codegen_id']} != {node.get('wholeStageCodegenId')}"
                )
            rest_metrics = [(m["name"].strip(), m["value"]) for m in node["metrics"]]
            my_metrics = [(m["name"], m["spark_ui"]) for m in n["metrics"]]
            result.n_metrics += len(rest_metrics)
            if [k for k, _ in rest_metrics] != [k for k, _ in my_metrics]:
                result.structure_diffs.append(
                    f"{label}: metric names {[k for k, _ in rest_metrics]} != "
                    f"{[k for k, _ in my_metrics]}"
                )
            mine_by_name = dict(my_metrics)
            for name, value in rest_metrics:
                got = mine_by_name.get(name)
                if got is None or got == value:
                    continue
                line = f"{label} {name!r}: SHS {value!r} ours {got!r}"
                if strip_annotation(got) == strip_annotation(value):
                    result.annotation_diffs.append(line)
                else:
                    result.numeric_diffs.append(line)
    return result
