"""The Spark adapter: the only part of wmviz that imports pyspark."""
