"""What the streaming rules share: where a query's finding points, its identifying evidence."""

from __future__ import annotations

from analyzer.aggregate.streaming import StreamingFigures
from analyzer.insights.finding import Evidence, ev


def first_execution(fig: StreamingFigures, batch_id: int | None = None) -> int | None:
    for batch in fig.query.batches:
        if batch.execution_ids and (batch_id is None or batch.batch_id == batch_id):
            return batch.execution_ids[0]
    return None


def query_evidence(fig: StreamingFigures) -> list[Evidence]:
    q = fig.query
    return [
        ev("query_name", "query", q.label, "text"),
        ev("run_id", "run id", q.run_id, "text"),
        ev("n_batches", "batches", fig.n_batches, "count"),
    ]
