-- DuckDB views over this export (not part of the pack format). From the export's folder: duckdb -init views.sql
CREATE OR REPLACE VIEW "annotations" AS SELECT * FROM read_parquet('tables/annotations/*.parquet', hive_partitioning = false);
CREATE OR REPLACE VIEW "patterns" AS SELECT * FROM read_parquet('tables/patterns/**/*.parquet', hive_partitioning = false);
CREATE OR REPLACE VIEW "provenance" AS SELECT * FROM read_parquet('tables/provenance/*.parquet', hive_partitioning = false);
CREATE OR REPLACE VIEW "quickstart" AS SELECT * FROM read_parquet('tables/quickstart/**/*.parquet', hive_partitioning = false);
CREATE OR REPLACE VIEW "raters" AS SELECT * FROM read_parquet('tables/raters/*.parquet', hive_partitioning = false);
CREATE OR REPLACE VIEW "ratings" AS SELECT * FROM read_parquet('tables/ratings/*.parquet', hive_partitioning = false);
CREATE OR REPLACE VIEW "rules" AS SELECT * FROM read_parquet('tables/rules/*.parquet', hive_partitioning = false);
CREATE OR REPLACE VIEW "sightings" AS SELECT * FROM read_parquet('tables/sightings/*.parquet', hive_partitioning = false);
CREATE OR REPLACE VIEW "tilings" AS SELECT * FROM read_parquet('tables/tilings/*.parquet', hive_partitioning = false);
CREATE OR REPLACE VIEW "verifications" AS SELECT * FROM read_parquet('tables/verifications/*.parquet', hive_partitioning = false);
