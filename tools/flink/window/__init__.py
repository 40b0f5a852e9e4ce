"""Drive the real Apache Flink 2.3.0 window operator (MiniCluster jobs from the flink-dist jar)
next to wmviz's.

`harness` compiles and runs `WmvizWindowHarness.java`; `replay` runs the same traces through
wmviz's pipeline and compares; `corpus` makes the seeded random traces.
"""
