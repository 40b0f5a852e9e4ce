-- Clicks per user session: a SESSION window TVF with a 10-second gap, partitioned by user, the
-- watermark pushed into the Kafka source on every row that raises it (2 seconds behind the rows).
-- wmviz's SESSION operator (wmviz/core/sql_session.py) is checked against this job for real.
CREATE TABLE clicks (
  user_id STRING,
  amount INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '2' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'clicks',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE sessions (
  user_id STRING,
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  clicks BIGINT,
  total INT,
  smallest INT,
  largest INT,
  mean INT
) WITH ('connector' = 'kafka', 'topic' = 'sessions', 'format' = 'json');

INSERT INTO sessions
SELECT user_id, window_start, window_end, COUNT(*) AS clicks, SUM(amount) AS total,
       MIN(amount) AS smallest, MAX(amount) AS largest, AVG(amount) AS mean
FROM TABLE(SESSION(TABLE clicks PARTITION BY user_id, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY user_id, window_start, window_end;
