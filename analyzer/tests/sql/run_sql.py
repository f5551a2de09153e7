#!/usr/bin/env python3
"""Runs the statement `analyzer sql` prints on one engine, over each trace given, and prints the
verdict rows as JSON: {"<trace>": [{"run_id", "scenario", "invariant", "verdict", "violations",
"reason", "scenario_verdict", "unfired_named"}, ...], ...}.

Usage: run_sql.py ENGINE ANALYZER TRACE...   (ENGINE: duckdb, datafusion or spark)

Each trace (a Parquet file or a directory of them) is registered as the table `trace`; the
statement itself is the same for every trace, but for a table with the optional columns
`counter_key` or `partition`, which gets the statement `--counter-key` or `--partition` prints
(with Spark, whose traces go into one table, every trace gets both, the column null where a trace
lacks it). A missing Python package is an error (exit 1).
"""
import json
import subprocess
import sys

COLUMNS = ["run_id", "scenario", "invariant", "verdict", "violations", "reason", "scenario_verdict",
           "unfired_named"]
NUMBERS = {4, 7}
# The optional columns, and the flag that makes the statement read each.
OPTIONAL = [("counter_key", "--counter-key"), ("partition", "--partition")]


def statement(analyzer, engine, *extra):
    return subprocess.run([analyzer, "sql", "--dialect", engine, *extra], check=True,
                          capture_output=True, text=True).stdout


def for_columns(analyzer, engine):
    """The statement for a table with the given columns: each optional column it has is read."""
    made = {}

    def sql(columns):
        flags = tuple(flag for column, flag in OPTIONAL if column in columns)
        if flags not in made:
            made[flags] = statement(analyzer, engine, *flags)
        return made[flags]
    return sql


def rows_of(tuples):
    return [dict(zip(COLUMNS, (None if v is None else (int(v) if i in NUMBERS else str(v))
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
        columns = [d[0] for d in con.execute("SELECT * FROM trace LIMIT 0").description]
        return rows_of(con.execute(sql(columns)).fetchall())
    return run


def datafusion_runner(sql):
    from datafusion import SessionContext

    def run(path):
        ctx = SessionContext()
        ctx.register_parquet("trace", path)
        columns = ctx.table("trace").schema().names
        table = ctx.sql(sql(columns)).to_arrow_table()
        return rows_of(zip(*(table.column(c).to_pylist() for c in COLUMNS)))
    return run


def spark_session():
    from pyspark.sql import SparkSession
    return (SparkSession.builder.master("local[2]").appName("outbox-trace-sql")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.memory", "4g")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
            .getOrCreate())


SPARK_TYPES = {"seq": "bigint", "ts_ns": "bigint", "incarnation": "bigint", "aggregate_seq": "bigint",
               "attempt": "bigint", "broker_seq": "bigint", "store_rev": "bigint", "amount": "bigint",
               "counter": "bigint", "partition": "int"}
CONTRACT = ["run_id", "scenario", "seq", "ts_ns", "backend", "actor", "incarnation", "kind", "task_id",
            "event_id", "aggregate_id", "aggregate_seq", "attempt", "broker_seq", "store_rev", "amount",
            "counter", "detail"]


def spark_runner(sql):
    """Spark plans and schedules every stage of the statement anew for each table, which costs far
    more than the data: all traces go into one table, each run_id prefixed with its trace's
    number, and the statement runs once. That table has every optional column (null for a trace
    without it), so it gets the statement that reads them."""
    from pyspark.sql import functions as F
    spark = spark_session()
    spark.sparkContext.setLogLevel("ERROR")

    def run_all(paths):
        tables = []
        for i, path in enumerate(paths):
            df = spark.read.parquet(path)
            cols = [F.col(c).cast(SPARK_TYPES.get(c, "string")).alias(c) for c in CONTRACT]
            for key, _ in OPTIONAL:
                kind = SPARK_TYPES.get(key, "string")
                cols.append((F.col(key) if key in df.columns else F.lit(None)).cast(kind).alias(key))
            df = df.select(*cols).withColumn("run_id", F.concat(F.lit(f"{i}\t"), F.col("run_id")))
            tables.append(df)
        union = tables[0]
        for t in tables[1:]:
            union = union.unionByName(t)
        union.createOrReplaceTempView("trace")
        rows = rows_of(tuple(r) for r in spark.sql(sql([c for c, _ in OPTIONAL])).collect())
        out = {p: [] for p in paths}
        for r in rows:
            i, run_id = r["run_id"].split("\t", 1)
            r["run_id"] = run_id
            out[paths[int(i)]].append(r)
        return out
    return run_all


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    engine, analyzer, traces = sys.argv[1], sys.argv[2], sys.argv[3:]
    runners = {"duckdb": duckdb_runner, "datafusion": datafusion_runner, "spark": spark_runner}
    if engine not in runners:
        sys.exit(f"run_sql.py: unknown engine {engine}")
    # A table with an optional column gets the statement that reads it.
    run = runners[engine](for_columns(analyzer, engine))
    if engine == "spark":
        print(json.dumps(run(traces), indent=1))
    else:
        print(json.dumps({t: run(t) for t in traces}, indent=1))


if __name__ == "__main__":
    main()
