"""A local batch worker process: `python -P -m analyzer.batch.worker_process JOB_FD RESULT_FD
PARENT_PID MAX_MEMORY_MB`.

It dies with its parent, limits its memory before importing the analyzer, then answers each
`(Job, JobSettings, staging directory)` received on JOB_FD with `STARTED` and then a `JobResult`
on RESULT_FD, until it receives None or the pipe closes. It writes an application's reports into
the run's staging directory, nothing else. After a memory failure it exits: its heap may be in a
bad state.
"""

from __future__ import annotations

import sys
from pathlib import Path

STARTED = "started"
"""Sent when a job is received, before its result."""


def main(argv: list[str]) -> None:
    """Serve jobs from the parent until told to stop."""
    job_fd, result_fd, parent_pid, max_memory_mb = (int(a) for a in argv)
    from analyzer.batch.limits import set_memory_limit
    from analyzer.eventlog.processes import die_with_parent

    die_with_parent(parent_pid)
    set_memory_limit(max_memory_mb)
    from multiprocessing.connection import Connection

    from analyzer.batch.worker import process_job

    jobs = Connection(job_fd, writable=False)
    results = Connection(result_fd, readable=False)
    while True:
        try:
            message = jobs.recv()
        except EOFError:
            return
        if message is None:
            return
        job, settings, staging_dir = message
        results.send(STARTED)  # the job's time starts now, not while this process started
        result = process_job(job, settings, Path(staging_dir))
        results.send(result)
        if result.failure == "limit":
            return


if __name__ == "__main__":
    main(sys.argv[1:])
