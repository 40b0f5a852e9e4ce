"""Drive the real Apache Flink `StatusWatermarkValve` (from the flink-dist jar) next to wmviz's.

Everything lives in `tools.flink.valve.jar`: finding or fetching the jar, compiling the Java
harness (`WmvizValveHarness.java`) and running it in trace or bench mode. It is not imported here,
so that `python -m tools.flink.valve.jar` runs the module exactly once.
"""
