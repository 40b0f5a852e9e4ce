-- The top 2 events by price per local hour of Europe/Berlin (Window TopN over a TIMESTAMP_LTZ
-- TUMBLE), across the night the clocks go back: the repeated hour is one window, fired at its later end.
SET 'table.local-time-zone' = 'Europe/Berlin';
CREATE TABLE events (
  id STRING,
  price INT,
  epoch_ms BIGINT,
  ts AS TO_TIMESTAMP_LTZ(epoch_ms, 3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka', 'topic' = 'events', 'properties.bootstrap.servers' = 'kafka:9092',
  'format' = 'json', 'scan.watermark.emit.strategy' = 'on-event'
);
CREATE TABLE top_events (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  id STRING,
  price INT,
  rn BIGINT
) WITH ('connector' = 'kafka', 'topic' = 'top', 'format' = 'json');
INSERT INTO top_events
SELECT window_start, window_end, id, price, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rn
  FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '1' HOUR))
) WHERE rn <= 2;
