"""Compare plan layouts: cluster-box overlaps, operators inside another cluster's box, operator
overlaps, edge crossings (straight segments from an input's bottom centre to its reader's top
centre, the same for every layout), drawing size and layout time. See export_graphs.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

Rect = list[float]


def _overlap(a: Rect, b: Rect) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def _side(a: tuple[float, float], b: tuple[float, float], c: tuple[float, float]) -> int:
    v = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
    return (v > 1e-9) - (v < -1e-9)


def _crossing(p1: Any, p2: Any, p3: Any, p4: Any) -> bool:
    return _side(p1, p2, p3) * _side(p1, p2, p4) < 0 and _side(p3, p4, p1) * _side(p3, p4, p2) < 0


def measure(graph: dict[str, Any], layout: dict[str, Any]) -> tuple[int, int, int, int, str]:
    nodes = {int(k): v for k, v in layout["nodes"].items()}
    clusters = layout["clusters"]
    member = {n["id"]: n["cluster"] for n in graph["nodes"]}
    c_overlaps = sum(
        1 for i, a in enumerate(clusters) for b in clusters[i + 1 :] if _overlap(a[1:], b[1:])
    )
    foreign = sum(
        1
        for c in clusters
        for nid, b in nodes.items()
        if member[nid] != c[0] and _overlap(c[1:], b)
    )
    boxes = list(nodes.values())
    n_overlaps = sum(1 for i, a in enumerate(boxes) for b in boxes[i + 1 :] if _overlap(a, b))
    segments = []
    for a, b in graph["edges"]:
        ra, rb = nodes[a], nodes[b]
        segments.append(({a, b}, (ra[0] + ra[2] / 2, ra[1] + ra[3]), (rb[0] + rb[2] / 2, rb[1])))
    crossings = sum(
        1
        for i, (e1, p1, p2) in enumerate(segments)
        for e2, p3, p4 in segments[i + 1 :]
        if not e1 & e2 and _crossing(p1, p2, p3, p4)
    )
    every = boxes + [c[1:] for c in clusters]
    width = max(b[0] + b[2] for b in every) - min(b[0] for b in every)
    height = max(b[1] + b[3] for b in every) - min(b[1] for b in every)
    return c_overlaps, foreign, n_overlaps, crossings, f"{width:.0f}×{height:.0f}"


def main(directory: Path) -> None:
    graphs = json.loads((directory / "layouts.json").read_text())
    print(
        "| plan | layout | cluster overlaps | operators in another box | operator overlaps "
        "| edge crossings | size (px) | time (ms) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for graph in graphs:
        for name in ("ours", "dagre", "elk"):
            m = measure(graph, graph[name])
            size = f"{len(graph['nodes'])} ops, {len(graph['clusters'])} clusters"
            print(
                f"| {graph['case']} ({size}) | {name} | {m[0]} | {m[1]} | {m[2]} | {m[3]} "
                f"| {m[4]} | {graph[name]['ms']:.1f} |"
            )


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/plan_layout"))
