-- Orders priced at the currency rate valid at each order's time (an event-time temporal join of
-- an append-only probe table with a versioned table: an upsert table with a primary key and a
-- watermark). Two INSERTs, planned together: the inner join and the LEFT join.
CREATE TABLE orders (
  order_id STRING,
  currency STRING,
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

CREATE TABLE priced (
  order_id STRING,
  currency STRING,
  amount INT,
  rate INT,
  order_ts TIMESTAMP(3),
  rate_ts TIMESTAMP(3)
) WITH ('connector' = 'kafka', 'topic' = 'priced', 'format' = 'json');

CREATE TABLE priced_or_null (
  order_id STRING,
  currency STRING,
  amount INT,
  rate INT,
  order_ts TIMESTAMP(3),
  rate_ts TIMESTAMP(3)
) WITH ('connector' = 'kafka', 'topic' = 'priced-or-null', 'format' = 'json');

INSERT INTO priced
SELECT o.order_id, o.currency, o.amount, r.rate, o.ts, r.ts
FROM orders AS o
JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r
ON o.currency = r.currency;

INSERT INTO priced_or_null
SELECT o.order_id, o.currency, o.amount, r.rate, o.ts, r.ts
FROM orders AS o
LEFT JOIN rates FOR SYSTEM_TIME AS OF o.ts AS r
ON o.currency = r.currency;
