"""Renderers: a view model in, a string out."""
