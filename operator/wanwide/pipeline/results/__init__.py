"""Results: result bundles → tidy tables and a Parquet store → statistics with intervals, figures, the report
(``wanwide report``) and comparisons (``wanwide compare``); fetching a Benchmark's bundles from S3."""
