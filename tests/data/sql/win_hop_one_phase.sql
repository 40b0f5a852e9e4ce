-- Clicks per user in 15-second HOP windows sliding by 5 seconds, aggregated in one phase: a late
-- row still counts in the windows of its slice not yet fired.
SET 'table.optimizer.agg-phase-strategy' = 'ONE_PHASE';

CREATE TABLE clicks (
  user_id STRING,
  amount BIGINT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'clicks',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE per_window (
  user_id STRING,
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  window_time TIMESTAMP(3),
  n BIGINT,
  total BIGINT,
  smallest BIGINT
) WITH ('connector' = 'kafka', 'topic' = 'per-window', 'format' = 'json');

INSERT INTO per_window
SELECT user_id, window_start, window_end, window_time, COUNT(*) AS n, SUM(amount) AS total, MIN(amount) AS smallest
FROM TABLE(HOP(TABLE clicks, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '15' SECOND))
GROUP BY user_id, window_start, window_end, window_time;
