"""Element ids of the HTML page, made in one place so that every link finds its target (the
shared views name them too: "where the time went" links to plan nodes and stage rows)."""

from __future__ import annotations


def execution_anchor(execution_id: int) -> str:
    """Element id of an execution's section: `exec-3`."""
    return f"exec-{execution_id}"


def plan_dom_id(execution_id: int, plan_index: int) -> str:
    """Element id of a plan version's container, also the prefix of its nodes' ids."""
    return f"e{execution_id}-p{plan_index}"


def node_dom_id(plan_dom_id: str, node_id: int) -> str:
    """Element id of a node (or key of a cluster) in a plan graph."""
    return f"{plan_dom_id}-n{node_id}"


def stage_anchor(execution_id: int, stage_str: str) -> str:
    """Element id of a stage attempt's rows in an execution's stage table: `exec-3-stage-5`
    (`exec-3-stage-5.1` for a retried attempt)."""
    return f"{execution_anchor(execution_id)}-stage-{stage_str}"
