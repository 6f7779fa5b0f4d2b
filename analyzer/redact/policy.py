"""What a redacted report covers: what is learned from an analysis, in which order, and the
sentence a redacted report carries.

Tokens are numbered by first sight, so the order in which an analysis is read fixes them: the
user, user and host settings, every executor's host, the log's path and file name, then the free
text of the log (application name, execution descriptions and errors, plans, jobs, stages,
executor removal reasons). Every format of one analysis then shows the same tokens.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import TYPE_CHECKING

from analyzer.redact.redactor import Redactor

if TYPE_CHECKING:
    from analyzer.aggregate.analysis import Analysis

REDACTION_NOTE = (
    "redacted: literals, paths, hosts and users are replaced by stable tokens "
    "(host-N, path-N, user-N, num-N, 'str-N'); see docs/redaction.md"
)
"""The line a redacted report carries (text, HTML banner, Markdown)."""

_USER_KEYS = frozenset(
    {"spark.user", "user.name", "spark.yarn.user", "hadoop_user_name", "user", "spark.sparkuser"}
)
"""Settings whose value is a user name."""
_HOST_KEYS = frozenset({"spark.driver.host", "spark.driver.bindaddress", "spark.local.ip"})
"""Settings whose value is a host."""


def redactor_for(*analyses: Analysis) -> Redactor:
    """Make the redactor of one analysis (or of several shown in one report, such as the two
    runs of a diff): read their hosts, users and free text in log order."""
    redactor = Redactor()
    for analysis in analyses:
        learn_analysis(redactor, analysis)
    return redactor


def learn_analysis(redactor: Redactor, analysis: Analysis) -> None:
    """Learn the hosts, users, paths and free text of an analysis, numbering their tokens."""
    app = analysis.application
    props = [*app.spark_properties, *app.environment.spark_properties]
    system = list(app.environment.system_properties)
    if app.user:
        redactor.add_user(app.user)
    for key, value in [*props, *system]:
        if key.lower() in _USER_KEYS:
            redactor.add_user(value)
        elif key.lower() in _HOST_KEYS:
            redactor.add_host(value)
    for executor in app.executors:
        redactor.add_host(executor.host)
        if executor.host_port:
            redactor.add_host(executor.host_port.rpartition(":")[0] or executor.host_port)
    source = analysis.source
    redactor.text(source.path)
    redactor.add_path_name(PurePath(source.path).name)
    for part in analysis.read_stats.truncated_parts:
        redactor.add_path_name(PurePath(part).name)
    redactor.free_text(app.name)
    for _, value in [*props, *system]:
        redactor.text(value)
    for ex in app.executions:
        redactor.free_text(ex.description)
        if ex.shown_description != ex.description:
            redactor.free_text(ex.shown_description)
        redactor.free_text(ex.error_message or "")
        for plan in ex.plans:
            for node in plan.graph.nodes:
                redactor.text(node.desc)
                for _, value in node.metadata:
                    redactor.text(value)
        redactor.text(ex.final_plan.physical_plan_description)
    for job in app.jobs:
        for text in (
            job.description,
            job.error_message,
            job.job_group,
            job.name,
            *job.job_tags,
        ):
            redactor.free_text(text or "")
    for stage in app.stages:
        redactor.free_text(stage.name)
        redactor.free_text(stage.failure_reason or "")
    for executor in app.executors:
        redactor.free_text(executor.removed_reason or "")
