"""Reads the archive in a bucket with one engine, the way docs/archive.md tells a researcher to, and
prints one JSON line the test (engines.test.ts) compares with the local Parquet and the API.

usage: engines_read.py pyarrow|polars ENDPOINT BUCKET PREFIX LOCAL_PARQUET_DIR DATASETS_JSON
       engines_read.py duckdb SQL_OF_THE_DOCS LOCAL_SQL
       engines_read.py spark ENDPOINT BUCKET PREFIX JARS MARKET TOKEN DAY AS_OF_MS_JSON
Credentials come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.
"""

import json
import os
import sys


def with_pyarrow(endpoint, bucket, prefix, local, datasets):
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    import pyarrow.fs as pafs

    s3 = pafs.S3FileSystem(endpoint_override=endpoint, scheme="http", region="us-east-1",
                           access_key=os.environ["AWS_ACCESS_KEY_ID"], secret_key=os.environ["AWS_SECRET_ACCESS_KEY"])
    out = {}
    for fam_ds in datasets:
        remote = ds.dataset(f"{bucket}/{prefix}/parquet/{fam_ds}", filesystem=s3, format="parquet", partitioning="hive")
        here = ds.dataset(f"{local}/{fam_ds}", format="parquet", partitioning="hive")
        res = []
        for d in (remote, here):
            t = d.to_table().sort_by([("market_id", "ascending"), ("seq", "ascending")])
            res.append({
                "rows": t.num_rows,
                "dates": sorted(str(x) for x in pc.unique(t["date"]).to_pylist()),
                "markets": sorted(pc.unique(t["market_id"]).to_pylist()),
                "seq_sum": pc.sum(t["seq"]).as_py(),
                "first": [t["market_id"][0].as_py(), t["seq"][0].as_py(), str(t["receive_time"][0].as_py())] if t.num_rows else None,
                "last": [t["market_id"][-1].as_py(), t["seq"][-1].as_py(), str(t["receive_time"][-1].as_py())] if t.num_rows else None,
            })
        out[fam_ds] = {"bucket": res[0], "local": res[1]}
    return out


def with_polars(endpoint, bucket, prefix, local, datasets):
    import polars as pl

    opts = {"aws_endpoint_url": endpoint, "aws_region": "us-east-1", "aws_allow_http": "true",
            "aws_access_key_id": os.environ["AWS_ACCESS_KEY_ID"], "aws_secret_access_key": os.environ["AWS_SECRET_ACCESS_KEY"]}
    out = {}
    for fam_ds in datasets:
        res = []
        for src, so in ((f"s3://{bucket}/{prefix}/parquet/{fam_ds}/**/*.parquet", opts), (f"{local}/{fam_ds}/**/*.parquet", None)):
            lf = pl.scan_parquet(src, hive_partitioning=True, storage_options=so)
            t = lf.sort(["market_id", "seq"]).collect()
            res.append({
                "rows": t.height,
                "dates": sorted(str(x) for x in t["date"].unique().to_list()),
                "markets": sorted(t["market_id"].unique().to_list()),
                "seq_sum": int(t["seq"].sum()),
                "first": [t["market_id"][0], int(t["seq"][0]), str(t["receive_time"][0])] if t.height else None,
                "last": [t["market_id"][-1], int(t["seq"][-1]), str(t["receive_time"][-1])] if t.height else None,
            })
        out[fam_ds] = {"bucket": res[0], "local": res[1]}
    return out


def with_duckdb(sql, local_sql):
    """Runs the docs' query as printed (placeholders already replaced) and the same on local files.
    The httpfs extension comes from the duckdb-ext-httpfs wheel, so INSTALL needs no network."""
    import duckdb
    import duckdb_ext

    ext_dir = os.path.join(list(duckdb_ext.__path__)[0], "extensions")
    out = []
    for text in (sql, local_sql):
        con = duckdb.connect(config={"extension_directory": ext_dir})
        stmts = [x.strip() for x in text.split(";") if x.strip()]
        for st in stmts[:-1]:
            con.execute(st)
        cur = con.execute(stmts[-1])
        cols = [d[0] for d in cur.description]
        out.append([{c: str(v) for c, v in zip(cols, row)} for row in cur.fetchall()])
        con.close()
    return {"bucket": out[0], "local": out[1]}


def with_spark(endpoint, bucket, prefix, jars, market, token, day, as_of_ms):
    from pyspark.sql import SparkSession, Window
    from pyspark.sql import functions as F

    spark = (SparkSession.builder.master("local[1]").appName("pmtape-archive-test")
             .config("spark.jars", jars)
             .config("spark.ui.enabled", "false")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.sql.session.timeZone", "UTC")
             .config("spark.hadoop.fs.s3a.endpoint", endpoint)
             .config("spark.hadoop.fs.s3a.path.style.access", "true")
             .config("spark.hadoop.fs.s3a.connection.ssl.enabled", "false")
             .config("spark.hadoop.fs.s3a.endpoint.region", "us-east-1")
             .config("spark.hadoop.fs.s3a.access.key", os.environ["AWS_ACCESS_KEY_ID"])
             .config("spark.hadoop.fs.s3a.secret.key", os.environ["AWS_SECRET_ACCESS_KEY"])
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    # Partition discovery turns date=… folders into a `date` column; `_manifest.json` is skipped.
    changes = (spark.read.parquet(f"s3a://{bucket}/{prefix}/parquet/family=wallet-prediction/dataset=book_changes")
               .where(F.col("date") == day)
               .select("*", F.col("_metadata.row_index").alias("row_index"), F.col("_metadata.file_path").alias("file_path")))
    total = changes.count()
    books = []
    for at in as_of_ms:
        c = changes.where((F.col("market_id") == market) & (F.col("token_id") == token)
                          & (F.col("receive_time") <= F.timestamp_millis(F.lit(at))))
        # The newest full book of the token at or before T, then every later change: last word wins.
        base = c.where(F.col("is_snapshot") & F.col("side").isNotNull()).agg(F.max("seq").alias("base")).first()["base"]
        if base is None:
            books.append({"as_of": at, "bids": [], "asks": []})
            continue
        lv = c.where((F.col("seq") >= base) & F.col("price").isNotNull() & F.col("side").isNotNull() & (F.col("record_type") != "tick_size"))
        w = Window.partitionBy("side", "price").orderBy(F.col("seq").desc(), F.col("file_path").desc(), F.col("row_index").desc())
        last = lv.withColumn("n", F.row_number().over(w)).where((F.col("n") == 1) & (F.col("size") > 0))
        rows = last.select("side", F.col("price").cast("string").alias("price"), F.col("size").cast("string").alias("size")).collect()
        bids = sorted(([float(r["price"]), float(r["size"])] for r in rows if r["side"] == "bid"), key=lambda x: -x[0])
        asks = sorted(([float(r["price"]), float(r["size"])] for r in rows if r["side"] == "ask"), key=lambda x: x[0])
        books.append({"as_of": at, "bids": bids, "asks": asks})
    spark.stop()
    return {"rows": total, "books": books}


def main(argv):
    engine = argv[1]
    if engine in ("pyarrow", "polars"):
        endpoint, bucket, prefix, local, datasets = argv[2], argv[3], argv[4], argv[5], json.loads(argv[6])
        fn = with_pyarrow if engine == "pyarrow" else with_polars
        print(json.dumps(fn(endpoint, bucket, prefix, local, datasets)))
    elif engine == "duckdb":
        print(json.dumps(with_duckdb(argv[2], argv[3])))
    elif engine == "spark":
        endpoint, bucket, prefix, jars, market, token, day, as_of = argv[2:10]
        print(json.dumps(with_spark(endpoint, bucket, prefix, jars, market, token, day, json.loads(as_of))))
    else:
        sys.exit(f"unknown engine {engine}")


if __name__ == "__main__":
    main(sys.argv)
