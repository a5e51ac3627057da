"""Topics as Apache Iceberg tables: a topic with ``iceberg.mode`` set is written, committed records only,
into an Iceberg table that Spark, Trino or pyiceberg query (see docs/architecture.md, "Iceberg").

``config``: the ``iceberg.*`` topic configs. The rest loads pyarrow and pyiceberg, only once a topic uses them.
"""
