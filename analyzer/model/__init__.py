"""Frozen domain types: the application, its SQL executions and plan graphs, jobs, stages."""
