"""The harnesses that run real Flink 2.3.0 classes, one folder each; `launcher` starts them."""
