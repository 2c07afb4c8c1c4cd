"""Dagster jobs run on demand (not per mirror): ``refs_migration_job`` moves repositories between stores."""

from .refs_migration import RefsMigrationConfig, refs_migration_job

__all__ = ["RefsMigrationConfig", "refs_migration_job"]
