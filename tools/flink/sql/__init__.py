"""Real Flink SQL from Python for the tests: the fixtures of tests/data/sql and the replay oracle."""
