"""wmviz: a visual debugger for event-time watermarks in Apache Flink."""

__version__ = "0.2.0"
