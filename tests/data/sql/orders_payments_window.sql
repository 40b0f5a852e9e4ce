-- Two Kafka tables joined within 10 minutes, revenue per 10-second window of the join; a
-- filesystem table of refunds windowed on its own. The Kafka tables push their watermarks into
-- the source (per partition); the filesystem table cannot, so the planner keeps a separate
-- WatermarkAssigner after it and its scan.watermark.* options do nothing.
SET 'pipeline.auto-watermark-interval' = '200 ms';

CREATE TABLE orders (
  order_id STRING,
  amount DOUBLE,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.idle-timeout' = '30 s',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE payments (
  order_id STRING,
  paid DOUBLE,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'payments',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE refunds (
  order_id STRING,
  refunded DOUBLE,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'filesystem',
  'path' = '/data/refunds',
  'format' = 'csv',
  'scan.watermark.idle-timeout' = '10 s',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE revenue (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  orders BIGINT,
  paid DOUBLE
) WITH ('connector' = 'kafka', 'topic' = 'revenue', 'format' = 'json');

CREATE TABLE refund_totals (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  refunded DOUBLE
) WITH ('connector' = 'kafka', 'topic' = 'refund-totals', 'format' = 'json');

CREATE TEMPORARY VIEW paid_orders AS
SELECT o.order_id, p.paid, o.ts
FROM orders o, payments p
WHERE o.order_id = p.order_id
  AND p.ts BETWEEN o.ts - INTERVAL '10' MINUTE AND o.ts;

INSERT INTO revenue
SELECT window_start, window_end, COUNT(*) AS orders, SUM(paid) AS paid
FROM TABLE(TUMBLE(TABLE paid_orders, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end;

INSERT INTO refund_totals
SELECT window_start, window_end, SUM(refunded) AS refunded
FROM TABLE(TUMBLE(TABLE refunds, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end;
