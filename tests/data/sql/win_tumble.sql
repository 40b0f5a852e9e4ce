-- Clicks per user in 10-second TUMBLE windows offset by 2 seconds ([10:00:02, 10:00:12), ...);
-- the planner's default two-phase aggregation (a local stage before the exchange buffers
-- partials per user and slice).

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
  n BIGINT,
  total BIGINT,
  smallest BIGINT
) WITH ('connector' = 'kafka', 'topic' = 'per-window', 'format' = 'json');

INSERT INTO per_window
SELECT user_id, window_start, window_end, COUNT(*) AS n, SUM(amount) AS total, MIN(amount) AS smallest
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND, INTERVAL '2' SECOND))
GROUP BY user_id, window_start, window_end;
