"""Java-compatibility helpers of the core: `long` arithmetic as Flink computes it (`longs`) and
`java.util.HashMap<Long, V>` iteration order (`javamap`)."""
