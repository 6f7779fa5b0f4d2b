"""Two analyses compared: executions matched, plans aligned, the change and its likely cause."""
