-- The CUMULATE incident with the dead-letter query users add to catch late rows:
-- `WHERE ts < CURRENT_WATERMARK(ts)` into a topic of their own. It catches some late rows, not
-- all, and not only the dropped ones (docs/late-rows.md).
CREATE TABLE orders (
  order_id STRING,
  amount INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders',
  'properties.bootstrap.servers' = 'kafka:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);
CREATE TABLE revenue_so_far (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  orders BIGINT,
  revenue INT
) WITH ('connector' = 'kafka', 'topic' = 'revenue-so-far', 'format' = 'json');
CREATE TABLE late_orders (
  order_id STRING,
  amount INT,
  ts TIMESTAMP(3)
) WITH ('connector' = 'kafka', 'topic' = 'late-orders', 'format' = 'json');
INSERT INTO late_orders
SELECT order_id, amount, ts FROM orders WHERE ts < CURRENT_WATERMARK(ts);
INSERT INTO revenue_so_far
SELECT window_start, window_end, COUNT(*) AS orders, SUM(amount) AS revenue
FROM TABLE(CUMULATE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '15' SECOND))
GROUP BY window_start, window_end;
