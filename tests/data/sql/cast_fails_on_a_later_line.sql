-- A job that fails on a later line, not its first: CAST of text to INT throws at run time when the
-- text is not a number (Flink 2.x: TRY_CAST would give NULL). The runner must name that line.
CREATE TABLE orders (
  order_id STRING,
  qty STRING,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'orders',
  'format' = 'json'
);

CREATE TABLE copies (order_id STRING, qty INT, ts TIMESTAMP(3)) WITH ('connector' = 'kafka', 'topic' = 'copies', 'format' = 'json');

INSERT INTO copies
SELECT order_id, CAST(qty AS INT), ts FROM orders;
