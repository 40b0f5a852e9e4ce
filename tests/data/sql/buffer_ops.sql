-- SQL's operators that buffer rows until the watermark (tests/test_sql_buffer_flink.py): row-time
-- OVER aggregations (ROWS and RANGE, unbounded and bounded), row-time deduplication (keep first,
-- keep last) and ORDER BY rowtime, each into a sink of its own, all reading one table whose
-- watermark is emitted on every row.
CREATE TABLE clicks (
  user_id STRING,
  amount INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH ('connector' = 'kafka', 'topic' = 'clicks', 'format' = 'json', 'scan.watermark.emit.strategy' = 'on-event');

CREATE TABLE over_rows_unbounded (user_id STRING, amount INT, ts TIMESTAMP(3), total INT, n BIGINT, low INT, high INT, mean INT)
WITH ('connector' = 'kafka', 'topic' = 'o1', 'format' = 'json');
CREATE TABLE over_range_unbounded (user_id STRING, amount INT, ts TIMESTAMP(3), total INT, n BIGINT)
WITH ('connector' = 'kafka', 'topic' = 'o2', 'format' = 'json');
CREATE TABLE over_rows_bounded (user_id STRING, amount INT, ts TIMESTAMP(3), total INT, low INT, high INT)
WITH ('connector' = 'kafka', 'topic' = 'o3', 'format' = 'json');
CREATE TABLE over_range_bounded (user_id STRING, amount INT, ts TIMESTAMP(3), total INT, n BIGINT, high INT)
WITH ('connector' = 'kafka', 'topic' = 'o4', 'format' = 'json');
CREATE TABLE first_click (user_id STRING, amount INT, ts TIMESTAMP(3))
WITH ('connector' = 'kafka', 'topic' = 'd1', 'format' = 'debezium-json');
CREATE TABLE last_click (user_id STRING, amount INT, ts TIMESTAMP(3))
WITH ('connector' = 'kafka', 'topic' = 'd2', 'format' = 'debezium-json');
CREATE TABLE sorted_clicks (user_id STRING, amount INT, ts TIMESTAMP(3))
WITH ('connector' = 'kafka', 'topic' = 's1', 'format' = 'json');

INSERT INTO over_rows_unbounded
SELECT user_id, amount, ts, SUM(amount) OVER w, COUNT(*) OVER w, MIN(amount) OVER w, MAX(amount) OVER w, AVG(amount) OVER w
FROM clicks WINDOW w AS (PARTITION BY user_id ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW);

INSERT INTO over_range_unbounded
SELECT user_id, amount, ts, SUM(amount) OVER w, COUNT(amount) OVER w
FROM clicks WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW);

INSERT INTO over_rows_bounded
SELECT user_id, amount, ts, SUM(amount) OVER w, MIN(amount) OVER w, MAX(amount) OVER w
FROM clicks WINDOW w AS (PARTITION BY user_id ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW);

INSERT INTO over_range_bounded
SELECT user_id, amount, ts, SUM(amount) OVER w, COUNT(*) OVER w, MAX(amount) OVER w
FROM clicks WINDOW w AS (PARTITION BY user_id ORDER BY ts RANGE BETWEEN INTERVAL '3' SECOND PRECEDING AND CURRENT ROW);

INSERT INTO first_click
SELECT user_id, amount, ts FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY ts ASC) AS rn FROM clicks
) WHERE rn = 1;

INSERT INTO last_click
SELECT user_id, amount, ts FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY ts DESC) AS rn FROM clicks
) WHERE rn = 1;

INSERT INTO sorted_clicks
SELECT user_id, amount, ts FROM clicks ORDER BY ts, amount DESC;
