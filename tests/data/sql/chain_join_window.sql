-- Operators in series (issue 29): an inner interval join of orders and payments feeds a 5-second
-- TUMBLE aggregate over the order's time. The window runs on the join's rows and on the join's
-- OUTPUT watermark (held back by its bounds); checked row by row against real Flink
-- (tests/test_sql_chain_flink.py).
SET 'pipeline.auto-watermark-interval' = '200 ms';

CREATE TABLE orders (
  order_id STRING,
  amount DOUBLE,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE payments (
  order_id STRING,
  paid DOUBLE,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'payments',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE paid_per_window (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  orders BIGINT,
  paid DOUBLE,
  biggest DOUBLE
) WITH ('connector' = 'kafka', 'topic' = 'paid-per-window', 'format' = 'json');

CREATE TEMPORARY VIEW paid_orders AS
SELECT o.order_id, o.amount, p.paid, o.ts
FROM orders o JOIN payments p
  ON o.order_id = p.order_id
  AND p.ts BETWEEN o.ts - INTERVAL '2' SECOND AND o.ts + INTERVAL '3' SECOND;

INSERT INTO paid_per_window
SELECT window_start, window_end, COUNT(*) AS orders, SUM(paid) AS paid, MAX(amount) AS biggest
FROM TABLE(TUMBLE(TABLE paid_orders, DESCRIPTOR(ts), INTERVAL '5' SECOND))
GROUP BY window_start, window_end;
