"""The shared kernel: pure helpers every app needs (healthchecks' `hc/lib`). It imports no app."""
