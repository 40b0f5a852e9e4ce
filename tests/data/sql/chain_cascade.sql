-- Operators in series (issue 29): a cascade of window aggregates. Clicks are counted per user in
-- 2-second TUMBLE windows; those rows, on their window_time, are summed per user in 10-second
-- TUMBLE windows. The second window runs on the first's output rows and output watermark; checked
-- row by row against real Flink (tests/test_sql_chain_flink.py).
SET 'pipeline.auto-watermark-interval' = '200 ms';

CREATE TABLE clicks (
  user_id STRING,
  amount BIGINT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'clicks',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE per_ten (
  user_id STRING,
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  windows BIGINT,
  clicks BIGINT,
  total BIGINT
) WITH ('connector' = 'kafka', 'topic' = 'per-ten', 'format' = 'json');

CREATE TEMPORARY VIEW per_two AS
SELECT user_id, window_time, COUNT(*) AS n, SUM(amount) AS total
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '2' SECOND))
GROUP BY user_id, window_start, window_end, window_time;

INSERT INTO per_ten
SELECT user_id, window_start, window_end, COUNT(*) AS windows, SUM(n) AS clicks, SUM(total) AS total
FROM TABLE(TUMBLE(TABLE per_two, DESCRIPTOR(window_time), INTERVAL '10' SECOND))
GROUP BY user_id, window_start, window_end;
