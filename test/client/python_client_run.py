"""Runs pmtape_client against a live server and prints what it got as one JSON object (the tap test
python-client.test.ts compares it with the HTTP answers). argv: module dir, base url, paid key,
free key, proxy url (cuts its first connection), limited url (rate limited), params JSON."""

import json
import sys

sys.path.insert(0, sys.argv[1])
import pmtape_client  # noqa: E402
from pmtape_client import Client, PmtapeError  # noqa: E402

base, paid, free, proxy, limited = sys.argv[2:7]
p = json.loads(sys.argv[7])
c = Client(base, paid)
out = {"has_pandas": pmtape_client.pandas is not None}

out["markets"] = [m["market_id"] for m in c.markets("coin", coin="btc", limit=1)]
out["snapshots"] = list(c.snapshots("coin", p["a"], coin="btc", include_orderbook=True, limit=37, start_time=p["start"], end_time=p["end"]))
out["yesno"] = list(c.snapshots("yesno-exchange", p["ticker"], limit=7))
out["timeseries"] = list(c.timeseries(p["wallet"], "chance", limit=5))
out["coverage"] = list(c.coverage(market_id=p["a"]))
out["latest"] = c.latest("wallet-prediction", p["wallet"], as_of=p["as_of"], outcome="Down")
out["rows_hex"] = c.dataset_rows("coin", "book_changes", p["a"], p["start"], p["end"]).hex()
try:
    Client(p["rows_proxy"], paid).dataset_rows("coin", "book_changes", p["a"], p["start"], p["end"])
    out["rows_cut"] = None
except PmtapeError as e:
    out["rows_cut"] = [e.code, e.message]


def run(client):
    gen = client.replay("coin", [p["a"], p["b"]], p["start"], p["end"], types=p["types"])
    lines = []
    while True:
        try:
            lines.append(next(gen))
        except StopIteration as stop:
            return lines, stop.value


out["replay"], out["replay_next"] = run(c)
out["replay_proxy"], out["replay_proxy_next"] = run(Client(proxy, paid))
out["tail"] = list(c.replay("coin", [p["a"], p["b"]], p["start"], p["end"], types=p["types"], after=out["replay_next"]))

errors = {}
try:
    list(c.snapshots("coin", "nope", coin="btc"))
except PmtapeError as e:
    errors["not_found"] = [e.status, e.code, e.message, e.request_id]
try:
    Client(base, free).latest("wallet-prediction", p["wallet"])
except PmtapeError as e:
    errors["plan"] = [e.status, e.code]
try:
    list(c.replay("coin", [p["a"]], p["start"], types=("candles",)))
except PmtapeError as e:
    errors["bad_type"] = [e.status, e.code, e.message]
out["errors"] = errors

slow = Client(limited, free)
out["limited"] = [slow.latest("yesno-exchange", p["ticker"])["seq"] for _ in range(8)]

out["yesno_books"] = list(c.snapshots("yesno-exchange", p["ticker"], include_orderbook=True, limit=2, end_time=p["end"]))[:2]
out["flatten"] = pmtape_client.flatten(out["replay"][:50]) + pmtape_client.flatten(out["yesno_books"])
if out["has_pandas"]:
    df = pmtape_client.to_dataframe(out["replay"])
    out["dataframe_rows"] = len(df)
    times = ("receive_time", "source_time", "bucket_start")
    first = pmtape_client.flatten(out["replay"])[0]
    out["flatten_first"] = {k: v for k, v in first.items() if k not in times}
    out["dataframe_first"] = {k: (v.item() if hasattr(v, "item") else v) for k, v in df.iloc[0].items() if k not in times}
    out["dataframe_time_dtype"] = str(df["receive_time"].dtype)
else:
    try:
        pmtape_client.to_dataframe(out["replay"])
    except ImportError as e:
        out["dataframe_error"] = str(e)
print(json.dumps(out))
