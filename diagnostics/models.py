"""Diagnostics snapshots and job runs arrive with the diagnostics issue."""
