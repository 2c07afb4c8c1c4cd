"""The Dagster wing: thin adapters that turn engine results into Dagster assets, checks, sensors and jobs.

``mirroring/`` holds one domain (per mirror: branch-heads and tags assets, their check, the commit and manager
sensors, the Spark resource); ``refs_migration`` the other (the job that moves repositories between stores);
``definitions.defs`` merges them into the code location. Nothing here replicates anything itself: every ref
step is a call into ``replication.MirrorEngine``.
"""
