-- A TIMESTAMP_LTZ rowtime computed from epoch milliseconds; windows are cut in the session's
-- time zone (Europe/Berlin: hour windows of local time, daylight saving included).
SET 'table.local-time-zone' = 'Europe/Berlin';

CREATE TABLE events (
  id STRING,
  epoch_ms BIGINT,
  ts AS TO_TIMESTAMP_LTZ(epoch_ms, 3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'events',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);

CREATE TABLE hourly (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  n BIGINT
) WITH ('connector' = 'kafka', 'topic' = 'hourly', 'format' = 'json');

INSERT INTO hourly
SELECT window_start, window_end, COUNT(*) AS n
FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '1' HOUR))
GROUP BY window_start, window_end;
