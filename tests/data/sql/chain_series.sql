-- Operators in series (issue 29), four chains in one job so one real run checks them all
-- (tests/test_sql_chain_flink.py), each on its own tables:
-- 1. an inner interval join of orders and payments feeding a 5-second TUMBLE aggregate over the
--    order's time: the window runs on the join's rows and its OUTPUT watermark, held back by the
--    join's bounds (the issue's "join -> window");
-- 2. a cascade: clicks counted per user in 2-second TUMBLE windows, those rows summed per user in
--    10-second TUMBLE windows on their window_time;
-- 3. bookings priced at the rate valid at each booking's time (an event-time temporal join) feeding
--    a 5-second TUMBLE per currency (a quiet rates table holds both);
-- 4. sales summed per item in 5-second TUMBLE windows feeding a Window TopN written as a separate
--    query: the 2 best items of each window (the TopN runs on the aggregate's attached windows).
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

CREATE TABLE bookings (
  booking_id STRING,
  currency STRING,
  amount INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'bookings',
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
SELECT o.booking_id, o.currency, o.amount, r.rate, o.ts
FROM bookings AS o
JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r
ON o.currency = r.currency;

INSERT INTO priced_per_window
SELECT currency, window_start, window_end, COUNT(*) AS orders, SUM(amount) AS amount, MAX(rate) AS top_rate
FROM TABLE(TUMBLE(TABLE priced, DESCRIPTOR(ts), INTERVAL '5' SECOND))
GROUP BY currency, window_start, window_end;

CREATE TABLE sales (
  item STRING,
  amount BIGINT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'sales',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE best_items (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  item STRING,
  total BIGINT,
  rn BIGINT
) WITH ('connector' = 'kafka', 'topic' = 'best-items', 'format' = 'json');

CREATE TEMPORARY VIEW item_totals AS
SELECT item, window_start, window_end, SUM(amount) AS total
FROM TABLE(TUMBLE(TABLE sales, DESCRIPTOR(ts), INTERVAL '5' SECOND))
GROUP BY item, window_start, window_end;

INSERT INTO best_items
SELECT window_start, window_end, item, total, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY total DESC) AS rn
  FROM item_totals
) WHERE rn <= 2;
