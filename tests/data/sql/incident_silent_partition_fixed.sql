CREATE TABLE clicks (
  user_id STRING,
  url STRING,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'clicks',
  'properties.bootstrap.servers' = 'kafka:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event',
  'scan.watermark.idle-timeout' = '5 s'
);
CREATE TABLE clicks_per_10s (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  clicks BIGINT
) WITH ('connector' = 'kafka', 'topic' = 'clicks-per-10s', 'format' = 'json');
INSERT INTO clicks_per_10s
SELECT window_start, window_end, COUNT(*) AS clicks
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end;
