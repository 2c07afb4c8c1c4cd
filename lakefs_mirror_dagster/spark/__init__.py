"""The Spark wing: range transfer and range validation as Spark tasks, the session they run in, and the one
function that wires them into a ``MirrorEngine`` (``wiring.use_spark``). Importing this package does not import
pyspark; a session starts only when a batch is big enough to need it."""
