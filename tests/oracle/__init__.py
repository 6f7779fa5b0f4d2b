"""The oracle of the conformance tests: Spark's own History Server and its REST API."""

from .history_server import (
    HistoryServer,
    OracleError,
    OracleHTTPError,
    StagedLog,
    missing_requirement,
)

__all__ = ["HistoryServer", "OracleError", "OracleHTTPError", "StagedLog", "missing_requirement"]
