-- The top 2 bids per item and 5-second TUMBLE window (Window TopN, ties in arrival order), from
-- one partition with 1 second of out-of-orderness allowed; a bid whose window has fired is dropped.
CREATE TABLE bids (
  bidder STRING,
  item STRING,
  price INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'bids',
  'properties.bootstrap.servers' = 'kafka:9092',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);
CREATE TABLE top_bids (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  item STRING,
  bidder STRING,
  price INT,
  rn BIGINT
) WITH ('connector' = 'kafka', 'topic' = 'top-bids', 'format' = 'json');
INSERT INTO top_bids
SELECT window_start, window_end, item, bidder, price, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, item ORDER BY price DESC) AS rn
  FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '5' SECOND))
) WHERE rn <= 2;
