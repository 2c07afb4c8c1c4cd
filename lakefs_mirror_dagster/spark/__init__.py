"""The Spark wing: range transfer and range validation as Spark tasks, the session they run in, and the plugs
that choose them for a ``MirrorEngine`` before it is built (``wiring.SparkPlugs``). Importing this package does
not import pyspark; a session starts only when a batch is big enough to need it."""
