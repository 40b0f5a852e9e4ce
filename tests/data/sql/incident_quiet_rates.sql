-- Orders priced at the exchange rate valid at each order's time (an event-time temporal join).
-- The rates table is a compacted upsert topic that changes a few times a day: while it is quiet,
-- its watermark stays at its last update, and no order can be priced past it.
CREATE TABLE orders (
  order_id STRING,
  currency STRING,
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
CREATE TABLE rates (
  currency STRING,
  rate INT,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts,
  PRIMARY KEY (currency) NOT ENFORCED
) WITH (
  'connector' = 'upsert-kafka',
  'topic' = 'rates',
  'properties.bootstrap.servers' = 'kafka:9092',
  'key.format' = 'json',
  'value.format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);
CREATE TABLE priced (
  order_id STRING,
  currency STRING,
  amount INT,
  rate INT,
  order_ts TIMESTAMP(3)
) WITH ('connector' = 'kafka', 'topic' = 'priced', 'format' = 'json');
INSERT INTO priced
SELECT o.order_id, o.currency, o.amount, r.rate, o.ts
FROM orders AS o
JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r
ON o.currency = r.currency;
