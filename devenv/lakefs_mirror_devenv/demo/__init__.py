"""The demo (``lakefs-mirror dev demo``): two local lakeFS regions, a sample repository, a mirror converging through
Dagster runs driven in-process by ``converge.run_until_converged``. Needs the development environment
(``scripts/dev demo`` installs it)."""
