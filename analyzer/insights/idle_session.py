"""Rule `idle-session`: the application spent most of its wall time with no job running.

An interactive session (a notebook, a shell) waits for its user between commands; that is not
a performance problem and nothing in Spark tunes it. Saying so keeps the driver-alone time from
being read as a slow query, and says where the held executors' cost comes from.
"""

from __future__ import annotations

from analyzer.aggregate.analysis import Analysis
from analyzer.insights._common import context
from analyzer.insights.finding import Finding, ev
from analyzer.insights.thresholds import Thresholds
from analyzer.model.application import DRIVER_ID
from analyzer.units import fmt_duration_ms, fmt_pct

RULE = "idle-session"
METHOD = "not a time cost: time with no job running, start-up and the end included"
IDLE_SHARE = 0.5
"""The driver alone for at least this share of the wall time …"""
MIN_PAUSE_MS = 30_000
"""… with a pause (between jobs, or before the first) at least this long."""


def _longest(gap_ms: int, startup_ms: int) -> str:
    """The longest stretch with no job, named: start-up counts, but is not a pause between jobs.

    >>> _longest(20_300, 78_000), _longest(90_000, 1_000)
    ('1m 18s before the first query or job', 'longest pause between jobs 1m 30s')
    """
    if startup_ms > gap_ms:
        return f"{fmt_duration_ms(startup_ms)} before the first query or job"
    return f"longest pause between jobs {fmt_duration_ms(gap_ms)}"


def context_startup_ms(analysis: Analysis) -> int:
    """How long the SparkContext took to start: from the application's start to its driver's
    block manager registering (ms; 0 when the log does not say)."""
    app = analysis.application
    driver = next((e for e in app.executors if e.executor_id == DRIVER_ID), None)
    if driver is None or driver.added_ms is None or app.start_ms is None:
        return 0
    return max(0, driver.added_ms - app.start_ms)


def detect_idle_session(analysis: Analysis, thresholds: Thresholds) -> list[Finding]:
    """Report (at info level) an application idle most of its wall time, with long pauses."""
    spent = analysis.time_spent
    if not spent.wall_ms or spent.driver_ms is None:
        return []
    # The SparkContext's own start-up (until the driver's block manager registered: on YARN in
    # client mode, waiting for the application master) is Spark starting, not a user waiting.
    context_ms = min(context_startup_ms(analysis), spent.startup_ms or 0)
    waiting = (spent.driver_ms - context_ms) / spent.wall_ms
    pause = max(spent.longest_gap_ms, (spent.startup_ms or 0) - context_ms)
    if waiting < IDLE_SHARE or pause < MIN_PAUSE_MS:
        return []
    share = spent.driver_ms / spent.wall_ms
    cap = context(analysis).capacity
    held = (
        ""
        if cap.local_mode
        else " Executors held meanwhile cost money, not time: see idle-executors."
    )
    return [
        Finding(
            rule=RULE,
            severity="info",
            title=(
                f"No job ran {fmt_pct(share)} of the application's wall time "
                f"({_longest(spent.longest_gap_ms, spent.startup_ms or 0)}): an idle or "
                "interactive session"
            ),
            suggestion=(
                "Nothing to tune in Spark: the driver was waiting (for a user, a notebook "
                "cell, or code outside Spark). Judge the queries by their own wall times." + held
            ),
            estimated_lost_ms=0,
            estimate_method=METHOD,
            evidence=(
                ev("driver_only_ms", "no job running", spent.driver_ms, "ms"),
                ev("startup_ms", "before the first query or job", spent.startup_ms, "ms"),
                ev("between_jobs_ms", "between jobs", spent.between_ms, "ms"),
                ev("after_last_job_ms", "after the last job", spent.after_ms, "ms"),
                ev("longest_gap_ms", "longest pause between jobs", spent.longest_gap_ms, "ms"),
                ev("idle_share", "share of the wall time", share, "share"),
            ),
        )
    ]
