-- SOURCE_WATERMARK() asks the source for its own watermarks; only a source that implements
-- SupportsSourceWatermark can give them. The released Kafka source does not, so Flink's planner
-- refuses this script (no connector a script can name has the ability in Flink 2.3.0).
CREATE TABLE orders (
  order_id STRING,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS SOURCE_WATERMARK()
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders',
  'format' = 'json'
);

CREATE TABLE counts (n BIGINT) WITH ('connector' = 'kafka', 'topic' = 'counts', 'format' = 'json');

INSERT INTO counts
SELECT COUNT(*) FROM orders;
