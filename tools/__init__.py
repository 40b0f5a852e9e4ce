"""Developer tools that are not part of the wmviz package (differential tests, benchmarks)."""
