-- One session over every row (no PARTITION BY): a SESSION window TVF with a 5-second gap and
-- COUNT(amount) (NULLs skipped), the watermark pushed into the Kafka source on every row that
-- raises it, 1 second behind. Checked against wmviz's SESSION operator for real.
CREATE TABLE clicks (
  user_id STRING,
  amount INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'clicks',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE bursts (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  clicks BIGINT,
  amounts BIGINT,
  total INT
) WITH ('connector' = 'kafka', 'topic' = 'bursts', 'format' = 'json');

INSERT INTO bursts
SELECT window_start, window_end, COUNT(*) AS clicks, COUNT(amount) AS amounts, SUM(amount) AS total
FROM TABLE(SESSION(TABLE clicks, DESCRIPTOR(ts), INTERVAL '5' SECOND))
GROUP BY window_start, window_end;
