"""Java-compatibility helpers of the core: `long` arithmetic as Flink computes it (`longs`),
`java.util.HashMap<Long, V>` iteration order (`javamap`) and the iteration order of hash maps and
sets of Flink `TimeWindow`s (`hashorder`)."""
