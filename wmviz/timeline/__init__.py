"""The timeline dataset: what the UI reads, written by the local and the Spark engine alike."""
