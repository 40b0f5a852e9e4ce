-- SOURCE_WATERMARK() asks the source for its own watermarks; only a source that implements
-- SupportsSourceWatermark can give them, and no connector a script can name has the ability in
-- Flink 2.3.0 (the released Kafka source has not). Flink's planner does NOT refuse this script:
-- Kafka takes watermark push-down, so the call is pushed into the source as an ordinary watermark
-- expression (EXPLAIN: watermark=[SOURCE_WATERMARK()]). The job fails only when it runs: the
-- generator evaluates SOURCE_WATERMARK(), whose runtime implementation always throws.
CREATE TABLE orders (
  order_id STRING,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS SOURCE_WATERMARK()
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders',
  'format' = 'json'
);

CREATE TABLE copies (order_id STRING, ts TIMESTAMP(3)) WITH ('connector' = 'kafka', 'topic' = 'copies', 'format' = 'json');

INSERT INTO copies
SELECT order_id, ts FROM orders;
