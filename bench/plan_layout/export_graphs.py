"""Export plan graphs and our layout of them, to compare with layout packages (see compare.py).

    .venv/bin/python bench/plan_layout/export_graphs.py /tmp/plan_layout
    cd /tmp/plan_layout && npm install @dagrejs/dagre elkjs
    node <repo>/bench/plan_layout/layout_packages.js /tmp/plan_layout
    .venv/bin/python bench/plan_layout/compare.py /tmp/plan_layout

The graphs: NDS q72's execution 24 (public log) and the TPC-H-like join samples. Every cluster
gets the same long label, so that all layouts must make room for it.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from analyzer import api
from analyzer.report.html.plan_graph import CLUSTER_LABEL_EXTRA_PX, LABEL_CHAR_PX, layout_plan

REPO = Path(__file__).resolve().parents[2]
CASES = [
    ("q72", REPO.parent / "shared/eventlogs/public/nds_q72_dataproc_2_2.zstd", {24}),
    ("join-strategies", REPO / "sample_eventlogs/local-1795320524741.lzf", None),
    ("join-agg-aqe-off", REPO / "sample_eventlogs/local-1795320224872", None),
    ("join-agg-aqe-on", REPO / "sample_eventlogs/local-1795320174558.zstd", None),
]
RUNS = 20


def main(out_dir: Path) -> None:
    out = []
    for name, path, chosen in CASES:
        if not path.exists():
            print(f"skipped {path}: not present")
            continue
        analysis = api.analyze(path)
        for execution in analysis.application.executions:
            if chosen and execution.execution_id not in chosen:
                continue
            graph = execution.final_plan.graph
            labels = {
                n.node_id: n.name + " · self 9m 19s · stage 50"
                for n in graph.nodes
                if n.is_cluster and n.member_ids
            }
            start = time.perf_counter()
            for _ in range(RUNS):
                full, _folded, _fold = layout_plan(graph, labels)
            ms = (time.perf_counter() - start) / RUNS * 1000
            ops = [n for n in graph.nodes if not n.is_cluster]
            out.append(
                {
                    "case": f"{name}/{execution.execution_id}",
                    "nodes": [
                        {
                            "id": n.node_id,
                            "cluster": n.cluster_id if n.cluster_id in labels else None,
                        }
                        for n in ops
                    ],
                    "clusters": [
                        {"id": c, "label_w": len(label) * LABEL_CHAR_PX + CLUSTER_LABEL_EXTRA_PX}
                        for c, label in labels.items()
                    ],
                    "edges": [
                        [e.from_id, e.to_id]
                        for e in graph.edges
                        if not graph.node(e.from_id).is_cluster
                        and not graph.node(e.to_id).is_cluster
                    ],
                    "ours": {
                        "ms": ms,
                        "nodes": {
                            str(k): [b.x, b.y, b.width, b.height] for k, b in full.nodes.items()
                        },
                        "clusters": [[c, b.x, b.y, b.width, b.height] for c, b in full.groups],
                    },
                }
            )
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "graphs.json").write_text(json.dumps(out))
    print(f"{len(out)} graphs in {out_dir / 'graphs.json'}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/plan_layout"))
