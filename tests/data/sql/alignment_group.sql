-- Two Kafka tables in one watermark alignment group: a split whose watermark runs more than
-- max-drift ahead of the group's slowest is paused until the group catches up.
CREATE TABLE clicks (
  user_id STRING,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'clicks',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event',
  'scan.watermark.alignment.group' = 'g1',
  'scan.watermark.alignment.max-drift' = '10 s',
  'scan.watermark.alignment.update-interval' = '1 s'
);

CREATE TABLE page_views (
  user_id STRING,
  ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'page-views',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event',
  'scan.watermark.alignment.group' = 'g1',
  'scan.watermark.alignment.max-drift' = '10 s'
);

CREATE TABLE activity (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  events BIGINT
) WITH ('connector' = 'kafka', 'topic' = 'activity', 'format' = 'json');

CREATE TEMPORARY VIEW events AS
SELECT user_id, ts FROM clicks
UNION ALL
SELECT user_id, ts FROM page_views;

INSERT INTO activity
SELECT window_start, window_end, COUNT(*) AS events
FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end;
