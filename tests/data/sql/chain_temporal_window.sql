-- Operators in series (issue 29): orders priced at the rate valid at each order's time (an
-- event-time temporal join) feed a 5-second TUMBLE aggregate per currency over the order's time.
-- The window runs on the join's rows and its output watermark (a quiet rates table holds both);
-- checked row by row against real Flink (tests/test_sql_chain_flink.py).
SET 'pipeline.auto-watermark-interval' = '200 ms';

CREATE TABLE orders (
  order_id STRING,
  currency STRING,
  amount INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE rates (
  currency STRING,
  rate INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts,
  PRIMARY KEY (currency) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = 'rates',
  'properties.bootstrap.servers' = 'localhost:9092',
  'key.format' = 'json',
  'value.format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE priced_per_window (
  currency STRING,
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  orders BIGINT,
  amount INT,
  top_rate INT
) WITH ('connector' = 'kafka', 'topic' = 'priced-per-window', 'format' = 'json');

CREATE TEMPORARY VIEW priced AS
SELECT o.order_id, o.currency, o.amount, r.rate, o.ts
FROM orders AS o
JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r
ON o.currency = r.currency;

INSERT INTO priced_per_window
SELECT currency, window_start, window_end, COUNT(*) AS orders, SUM(amount) AS amount, MAX(rate) AS top_rate
FROM TABLE(TUMBLE(TABLE priced, DESCRIPTOR(ts), INTERVAL '5' SECOND))
GROUP BY currency, window_start, window_end;
