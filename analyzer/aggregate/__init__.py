"""The only polars code: task tables and per-node metric statistics."""
