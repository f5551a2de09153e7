#!/usr/bin/env python3
"""Runs the statement `analyzer sql` prints on one engine, over each trace given, and prints the
verdict rows as JSON: {"<trace>": [{"run_id", "scenario", "invariant", "verdict", "violations",
"reason"}, ...], ...}.

Usage: run_sql.py ENGINE ANALYZER TRACE...   (ENGINE: duckdb, datafusion or spark)

Each trace (a Parquet file or a directory of them) is registered as the table `trace`; the
statement itself is the same for every trace. A missing Python package is an error (exit 1).
"""
import json
import subprocess
import sys

COLUMNS = ["run_id", "scenario", "invariant", "verdict", "violations", "reason"]


def statement(analyzer, engine, *extra):
    return subprocess.run([analyzer, "sql", "--dialect", engine, *extra], check=True,
                          capture_output=True, text=True).stdout


def rows_of(tuples):
    return [dict(zip(COLUMNS, (None if v is None else (int(v) if i == 4 else str(v))
                               for i, v in enumerate(t)))) for t in tuples]


def duckdb_runner(sql):
    import duckdb

    def run(path):
        con = duckdb.connect()
        con.execute("SET enable_progress_bar = false")
        escaped = path.replace("'", "''")
        source = escaped if path.endswith(".parquet") else escaped + "/**/*.parquet"
        con.execute(f"CREATE VIEW trace AS SELECT * FROM read_parquet('{source}', "
                    "hive_partitioning = true, hive_types_autocast = false, union_by_name = true)")
        return rows_of(con.execute(sql).fetchall())
    return run


def datafusion_runner(sql):
    from datafusion import SessionContext

    def run(path):
        ctx = SessionContext()
        ctx.register_parquet("trace", path)
        table = ctx.sql(sql).to_arrow_table()
        return rows_of(zip(*(table.column(c).to_pylist() for c in COLUMNS)))
    return run


def spark_session():
    from pyspark.sql import SparkSession
    return (SparkSession.builder.master("local[2]").appName("outbox-trace-sql")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
            .getOrCreate())


def spark_runner(sql):
    spark = spark_session()
    spark.sparkContext.setLogLevel("ERROR")

    def run(path):
        spark.read.parquet(path).createOrReplaceTempView("trace")
        return rows_of(tuple(r) for r in spark.sql(sql).collect())
    return run


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    engine, analyzer, traces = sys.argv[1], sys.argv[2], sys.argv[3:]
    runners = {"duckdb": duckdb_runner, "datafusion": datafusion_runner, "spark": spark_runner}
    if engine not in runners:
        sys.exit(f"run_sql.py: unknown engine {engine}")
    run = runners[engine](statement(analyzer, engine))
    print(json.dumps({t: run(t) for t in traces}, indent=1))


if __name__ == "__main__":
    main()
