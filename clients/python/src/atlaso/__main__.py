"""`python -m atlaso …` runs the CLI, as the `atlaso` command does."""

from atlaso.cli import main

raise SystemExit(main())
