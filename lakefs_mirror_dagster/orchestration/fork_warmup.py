"""Imported by ``ForkRunLauncher``'s fork server alone (``DEFAULT_PRELOAD``), never by the code location: it parses
botocore's endpoint and S3 models once (``storage.s3_client.warm_s3_models``), so each forked run builds its S3
stores without parsing them again (about a CPU second a run, most of a short run's set-up)."""

from ..storage.s3_client import warm_s3_models

__all__: list[str] = []

warm_s3_models()
