"""Fold the event stream into the domain model."""
