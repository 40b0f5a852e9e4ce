-- An inner interval join of orders and payments, a Calc after it, one sink: the join's rows carried
-- through `wmviz sql replay` (wmviz/sql/join_rows.py), checked row by row against real Flink
-- (tests/test_sql_join_rows_flink.py).
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

CREATE TABLE paid_orders (
  order_id STRING,
  paid DOUBLE,
  amount DOUBLE,
  order_ts TIMESTAMP(3),
  paid_ts TIMESTAMP(3)
) WITH ('connector' = 'kafka', 'topic' = 'paid-orders', 'format' = 'json');

INSERT INTO paid_orders
SELECT o.order_id, p.paid, o.amount, o.ts, CAST(p.ts AS TIMESTAMP(3))
FROM orders o JOIN payments p
  ON o.order_id = p.order_id
  AND p.ts BETWEEN o.ts - INTERVAL '2' SECOND AND o.ts + INTERVAL '3' SECOND;
