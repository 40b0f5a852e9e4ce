"""From an incident to a trace: recording a running Flink job's REST metrics, importing Prometheus
history and Kafka partition timestamps (docs/from-incident-to-trace.md)."""
