-- A running total per user (a row-time OVER aggregation) over clicks whose WATERMARK allows no
-- out-of-orderness at all. Rows a few milliseconds out of order are dropped silently: OVER waits
-- for the watermark and drops what is not after it on arrival, counting it only in a metric.
CREATE TABLE payments (
  user_id STRING,
  amount INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts
) WITH (
  'connector' = 'kafka',
  'topic' = 'payments',
  'properties.bootstrap.servers' = 'kafka:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);
CREATE TABLE running_total (
  user_id STRING,
  amount INT,
  ts TIMESTAMP(3),
  total INT
) WITH ('connector' = 'kafka', 'topic' = 'running-total', 'format' = 'json');
INSERT INTO running_total
SELECT user_id, amount, ts,
  SUM(amount) OVER (PARTITION BY user_id ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
FROM payments;
