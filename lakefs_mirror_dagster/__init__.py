"""Commit-exact mirroring of lakeFS repositories across regions and storage systems."""

__version__ = "0.1.0"

__all__ = ["__version__"]
