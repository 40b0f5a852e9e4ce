-- Window TopN and Window Deduplication over HOP and CUMULATE (issue 29), four jobs in one script so
-- one real run checks them all (tests/test_sql_window_rank_sliding_flink.py), each on its own table
-- of the same bids: the window table function copies a row into every window holding it, and each
-- copy is judged on its own window (late for a fired one, kept for an open one).
-- 1. the top 2 bids per item in 10-second HOP windows sliding by 5 seconds;
-- 2. the top 2 bids per item in CUMULATE windows growing by 5 seconds up to 15;
-- 3. each bidder's first bid in 10-second HOP windows sliding by 5 seconds;
-- 4. each bidder's last bid in CUMULATE windows growing by 5 seconds up to 15.
SET 'pipeline.auto-watermark-interval' = '200 ms';

CREATE TABLE hop_bids (
  bidder STRING,
  item STRING,
  price INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'hop-bids',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE cum_bids (
  bidder STRING,
  item STRING,
  price INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'cum-bids',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE hop_first (
  bidder STRING,
  item STRING,
  price INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'hop-first',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE cum_last (
  bidder STRING,
  item STRING,
  price INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'cum-last',
  'properties.bootstrap.servers' = 'localhost:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE top_hop (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  item STRING,
  bidder STRING,
  price INT,
  rn BIGINT
) WITH ('connector' = 'kafka', 'topic' = 'top-hop', 'format' = 'json');

CREATE TABLE top_cum (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  item STRING,
  bidder STRING,
  price INT,
  rn BIGINT
) WITH ('connector' = 'kafka', 'topic' = 'top-cum', 'format' = 'json');

CREATE TABLE first_hop (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  bidder STRING,
  price INT,
  ts TIMESTAMP(3)
) WITH ('connector' = 'kafka', 'topic' = 'first-hop', 'format' = 'json');

CREATE TABLE last_cum (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  bidder STRING,
  price INT,
  ts TIMESTAMP(3)
) WITH ('connector' = 'kafka', 'topic' = 'last-cum', 'format' = 'json');

INSERT INTO top_hop
SELECT window_start, window_end, item, bidder, price, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, item ORDER BY price DESC) AS rn
  FROM TABLE(HOP(TABLE hop_bids, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
) WHERE rn <= 2;

INSERT INTO top_cum
SELECT window_start, window_end, item, bidder, price, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, item ORDER BY price DESC) AS rn
  FROM TABLE(CUMULATE(TABLE cum_bids, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '15' SECOND))
) WHERE rn <= 2;

INSERT INTO first_hop
SELECT window_start, window_end, bidder, price, ts FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, bidder ORDER BY ts ASC) AS rn
  FROM TABLE(HOP(TABLE hop_first, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND))
) WHERE rn = 1;

INSERT INTO last_cum
SELECT window_start, window_end, bidder, price, ts FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, bidder ORDER BY ts DESC) AS rn
  FROM TABLE(CUMULATE(TABLE cum_last, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '15' SECOND))
) WHERE rn = 1;
