-- Revenue so far today, every 5 seconds (a CUMULATE window of 15 s in 5 s steps), from one Kafka
-- partition of orders with 1 second of out-of-orderness allowed. A late order changes the running
-- totals not yet emitted, never the one already emitted; a later, later order is dropped.
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
INSERT INTO revenue_so_far
SELECT window_start, window_end, COUNT(*) AS orders, SUM(amount) AS revenue
FROM TABLE(CUMULATE(TABLE orders, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '15' SECOND))
GROUP BY window_start, window_end;
