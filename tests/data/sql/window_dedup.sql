-- Each 5-second TUMBLE window's last bid per bidder (Window Deduplication, ORDER BY ts DESC), from
-- one partition with 1 second of out-of-orderness allowed.
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
CREATE TABLE last_bids (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  bidder STRING,
  price INT,
  ts TIMESTAMP(3)
) WITH ('connector' = 'kafka', 'topic' = 'last-bids', 'format' = 'json');
INSERT INTO last_bids
SELECT window_start, window_end, bidder, price, ts FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end, bidder ORDER BY ts DESC) AS rn
  FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '5' SECOND))
) WHERE rn = 1;
