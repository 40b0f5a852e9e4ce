-- A RIGHT window join over CUMULATE windows (2-second steps up to 6 seconds) of orders and clicks per user
-- (issue 29; wmviz/core/sql_window_join.py): its COMPILE PLAN is read by tests/test_sql_window_join.py.
-- The same join runs for real, beside the five others, in winjoin_all.sql
-- (tests/test_sql_window_join_flink.py). Each side 1 second out of order.

CREATE TABLE orders (
  user_id STRING,
  order_id STRING,
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

CREATE TABLE clicks (
  user_id STRING,
  page STRING,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'clicks',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE joined (
  user_id STRING,
  order_id STRING,
  amount INT,
  page STRING,
  click_user STRING,
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3)
) WITH ('connector' = 'kafka', 'topic' = 'joined', 'format' = 'json');

INSERT INTO joined
SELECT L.user_id, L.order_id, L.amount, R.page, R.user_id, R.window_start, R.window_end
FROM (SELECT * FROM TABLE(CUMULATE(TABLE orders, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '6' SECOND))) L
RIGHT JOIN (SELECT * FROM TABLE(CUMULATE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '6' SECOND))) R
  ON L.user_id = R.user_id AND L.window_start = R.window_start AND L.window_end = R.window_end;
