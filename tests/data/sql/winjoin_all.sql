-- Six window joins in one job, each of its own pair of tables (orders_X, clicks_X), so that one
-- real run checks them all (tests/test_sql_window_join_flink.py; wmviz/core/sql_window_join.py):
-- INNER over TUMBLE, LEFT over HOP, RIGHT over CUMULATE, FULL OUTER over TUMBLE, SEMI (IN) over
-- TUMBLE, ANTI (NOT EXISTS) over HOP. Every table is 1 second out of order; a row whose window has
-- fired is dropped and counted on its side (leftNumLateRecordsDropped / rightNumLateRecordsDropped).

CREATE TABLE orders_inner_tumble (
  user_id STRING,
  order_id STRING,
  amount INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders_inner_tumble',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE clicks_inner_tumble (
  user_id STRING,
  page STRING,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'clicks_inner_tumble',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE out_inner_tumble (
  user_id STRING,
  order_id STRING,
  amount INT,
  page STRING,
  click_user STRING,
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3)
) WITH ('connector' = 'kafka', 'topic' = 'out_inner_tumble', 'format' = 'json');

CREATE TABLE orders_left_hop (
  user_id STRING,
  order_id STRING,
  amount INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders_left_hop',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE clicks_left_hop (
  user_id STRING,
  page STRING,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'clicks_left_hop',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE out_left_hop (
  user_id STRING,
  order_id STRING,
  amount INT,
  page STRING,
  click_user STRING,
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3)
) WITH ('connector' = 'kafka', 'topic' = 'out_left_hop', 'format' = 'json');

CREATE TABLE orders_right_cumulate (
  user_id STRING,
  order_id STRING,
  amount INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders_right_cumulate',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE clicks_right_cumulate (
  user_id STRING,
  page STRING,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'clicks_right_cumulate',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE out_right_cumulate (
  user_id STRING,
  order_id STRING,
  amount INT,
  page STRING,
  click_user STRING,
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3)
) WITH ('connector' = 'kafka', 'topic' = 'out_right_cumulate', 'format' = 'json');

CREATE TABLE orders_full_tumble (
  user_id STRING,
  order_id STRING,
  amount INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders_full_tumble',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE clicks_full_tumble (
  user_id STRING,
  page STRING,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'clicks_full_tumble',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE out_full_tumble (
  user_id STRING,
  order_id STRING,
  amount INT,
  page STRING,
  click_user STRING,
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3)
) WITH ('connector' = 'kafka', 'topic' = 'out_full_tumble', 'format' = 'json');

CREATE TABLE orders_semi_tumble (
  user_id STRING,
  order_id STRING,
  amount INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders_semi_tumble',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE clicks_semi_tumble (
  user_id STRING,
  page STRING,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'clicks_semi_tumble',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE out_semi_tumble (
  user_id STRING,
  order_id STRING,
  amount INT,
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3)
) WITH ('connector' = 'kafka', 'topic' = 'out_semi_tumble', 'format' = 'json');

CREATE TABLE orders_anti_hop (
  user_id STRING,
  order_id STRING,
  amount INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders_anti_hop',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE clicks_anti_hop (
  user_id STRING,
  page STRING,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'clicks_anti_hop',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE out_anti_hop (
  user_id STRING,
  order_id STRING,
  amount INT,
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3)
) WITH ('connector' = 'kafka', 'topic' = 'out_anti_hop', 'format' = 'json');

INSERT INTO out_inner_tumble
SELECT L.user_id, L.order_id, L.amount, R.page, R.user_id, L.window_start, L.window_end
FROM (SELECT * FROM TABLE(TUMBLE(TABLE orders_inner_tumble, DESCRIPTOR(ts), INTERVAL '5' SECOND))) L
INNER JOIN (SELECT * FROM TABLE(TUMBLE(TABLE clicks_inner_tumble, DESCRIPTOR(ts), INTERVAL '5' SECOND))) R
  ON L.user_id = R.user_id AND L.window_start = R.window_start AND L.window_end = R.window_end;
INSERT INTO out_left_hop
SELECT L.user_id, L.order_id, L.amount, R.page, R.user_id, L.window_start, L.window_end
FROM (SELECT * FROM TABLE(HOP(TABLE orders_left_hop, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '6' SECOND))) L
LEFT JOIN (SELECT * FROM TABLE(HOP(TABLE clicks_left_hop, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '6' SECOND))) R
  ON L.user_id = R.user_id AND L.window_start = R.window_start AND L.window_end = R.window_end;
INSERT INTO out_right_cumulate
SELECT L.user_id, L.order_id, L.amount, R.page, R.user_id, R.window_start, R.window_end
FROM (SELECT * FROM TABLE(CUMULATE(TABLE orders_right_cumulate, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '6' SECOND))) L
RIGHT JOIN (SELECT * FROM TABLE(CUMULATE(TABLE clicks_right_cumulate, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '6' SECOND))) R
  ON L.user_id = R.user_id AND L.window_start = R.window_start AND L.window_end = R.window_end;
INSERT INTO out_full_tumble
SELECT L.user_id, L.order_id, L.amount, R.page, R.user_id, R.window_start, R.window_end
FROM (SELECT * FROM TABLE(TUMBLE(TABLE orders_full_tumble, DESCRIPTOR(ts), INTERVAL '5' SECOND))) L
FULL JOIN (SELECT * FROM TABLE(TUMBLE(TABLE clicks_full_tumble, DESCRIPTOR(ts), INTERVAL '5' SECOND))) R
  ON L.user_id = R.user_id AND L.window_start = R.window_start AND L.window_end = R.window_end;
INSERT INTO out_semi_tumble
SELECT L.user_id, L.order_id, L.amount, L.window_start, L.window_end
FROM (SELECT * FROM TABLE(TUMBLE(TABLE orders_semi_tumble, DESCRIPTOR(ts), INTERVAL '5' SECOND))) L
WHERE L.user_id IN (
  SELECT R.user_id FROM (SELECT * FROM TABLE(TUMBLE(TABLE clicks_semi_tumble, DESCRIPTOR(ts), INTERVAL '5' SECOND))) R
  WHERE L.window_start = R.window_start AND L.window_end = R.window_end);
INSERT INTO out_anti_hop
SELECT L.user_id, L.order_id, L.amount, L.window_start, L.window_end
FROM (SELECT * FROM TABLE(HOP(TABLE orders_anti_hop, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '6' SECOND))) L
WHERE NOT EXISTS (
  SELECT * FROM (SELECT * FROM TABLE(HOP(TABLE clicks_anti_hop, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '6' SECOND))) R
  WHERE L.user_id = R.user_id AND L.window_start = R.window_start AND L.window_end = R.window_end);
