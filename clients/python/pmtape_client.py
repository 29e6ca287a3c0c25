"""pmtape_client: a client of the pmtape HTTP API for research scripts, standard library only.

Copy this one file anywhere (Python 3.8+). Paged routes are generators that follow `next_cursor`;
`replay` streams `/v3/replay` and resumes after the last line it yielded if the connection drops;
a 429 is waited out (Retry-After) and retried; every other error raises PmtapeError with the
server's envelope. `to_dataframe` needs pandas; nothing else does.

    from pmtape_client import Client
    c = Client("http://127.0.0.1:8080", "pmt_...")
    for line in c.replay("coin", ["540817"], "2026-07-26T12:00:00Z", types=("book_change", "trade")):
        ...
"""

import base64
import calendar
import datetime as _dt
import http.client
import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request

try:  # optional: only to_dataframe uses it
    import pandas  # type: ignore
except ImportError:  # pragma: no cover - depends on the machine
    pandas = None

__all__ = ["Client", "PmtapeError", "replay_token", "flatten", "to_dataframe"]


class PmtapeError(Exception):
    """An error answered by the server (its envelope), or a transport failure (status 0)."""

    def __init__(self, status, code, message, request_id=None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id

    def __repr__(self):
        return "PmtapeError(%r, %r, %r, %r)" % (self.status, self.code, self.message, self.request_id)


def _time(t):
    """datetime (naive = UTC), epoch milliseconds or ISO 8601 text -> a query value."""
    if t is None:
        return None
    if isinstance(t, _dt.datetime):
        if t.tzinfo is not None:
            t = t.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)
    return t


def _iso_ms(text):
    """`2026-07-26T12:00:00.123Z` -> epoch milliseconds (exact, no float rounding)."""
    head, _, frac = text.rstrip("Z").partition(".")
    secs = calendar.timegm(time.strptime(head, "%Y-%m-%dT%H:%M:%S"))
    return secs * 1000 + int((frac + "000")[:3])


def replay_token(line):
    """The resume token of a replay line: base64url(JSON [receive_time_ms, market, seq, type])."""
    market = line.get("market_id", line.get("ticker", ""))
    raw = json.dumps([_iso_ms(line["receive_time"]), market, line["seq"], line["type"]], separators=(",", ":"), ensure_ascii=False)
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii").rstrip("=")


def _query(params):
    q = {}
    for k, v in params.items():
        if v is None:
            continue
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif isinstance(v, (list, tuple, set)):
            v = ",".join(str(x) for x in v)
        q[k] = _time(v) if isinstance(v, _dt.datetime) else v
    return ("?" + urllib.parse.urlencode(q)) if q else ""


_DROPPED = (http.client.IncompleteRead, http.client.HTTPException, ConnectionError, socket.timeout, urllib.error.URLError, OSError)


class Client:
    """`Client(base_url, api_key)`; every method maps one route of the API."""

    def __init__(self, base_url, api_key=None, max_retries=5, max_resumes=5, timeout=60.0):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.max_retries = max_retries
        self.max_resumes = max_resumes
        self.timeout = timeout

    # -- transport -----------------------------------------------------------------------------

    def _open(self, path, params=None):
        """A successful response to GET path; 429 waited out; other errors raise PmtapeError."""
        url = self.base_url + path + _query(params or {})
        headers = {"Accept": "application/json, application/x-ndjson"}
        if self.api_key:
            headers["Authorization"] = "Bearer " + self.api_key
        attempt = 0
        while True:
            try:
                return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=self.timeout)
            except urllib.error.HTTPError as e:
                body = e.read().decode("utf-8", "replace")
                if e.code == 429 and attempt < self.max_retries:
                    try:
                        wait = float(e.headers.get("Retry-After"))
                    except (TypeError, ValueError):
                        wait = 2.0 ** attempt
                    time.sleep(min(max(wait, 0.0), 60.0))
                    attempt += 1
                    continue
                try:
                    env = json.loads(body)["error"]
                    raise PmtapeError(env.get("status", e.code), env["code"], env.get("message", ""), env.get("request_id")) from None
                except (ValueError, KeyError, TypeError):
                    raise PmtapeError(e.code, "http_error", "HTTP %d: %s" % (e.code, body[:200]), e.headers.get("x-request-id")) from None

    def _json(self, path, params=None):
        with self._open(path, params) as r:
            return json.loads(r.read().decode("utf-8"))

    def _paged(self, path, params):
        params = dict(params)
        params.setdefault("limit", 1000)
        while True:
            page = self._json(path, params)
            for item in page["data"]:
                yield item
            if not page.get("next_cursor"):
                return
            params["cursor"] = page["next_cursor"]

    @staticmethod
    def _q(s):
        return urllib.parse.quote(str(s), safe="")

    def _market_path(self, family, market_id, coin, tail):
        if family == "yesno-exchange":
            return "/v3/yesno-exchange/%s/%s" % (self._q(market_id), tail)
        if family == "coin":
            if not coin:
                raise ValueError("the coin family needs coin=")
            return "/v3/%s/markets/%s/%s" % (self._q(coin), self._q(market_id), tail)
        return "/v3/wallet-prediction/%s/%s" % (self._q(market_id), tail)

    @staticmethod
    def _times(params):
        return {k: _time(v) for k, v in params.items()}

    # -- routes --------------------------------------------------------------------------------

    def markets(self, family, **filters):
        """Markets of a family; the coin family needs coin=. Filters: window, status, series, start_time, end_time."""
        filters = self._times(filters)
        if family == "coin":
            coin = filters.pop("coin", None)
            if not coin:
                raise ValueError("the coin family needs coin=")
            return self._paged("/v3/%s/markets" % self._q(coin), filters)
        return self._paged("/v3/%s/markets" % family, filters)

    def snapshots(self, family, market_id, coin=None, **params):
        """Snapshots of one market (yes/no: market_id is the ticker): include_orderbook, interval, depth, outcome, times."""
        return self._paged(self._market_path(family, market_id, coin, "snapshots"), self._times(params))

    def timeseries(self, market_id, metric, **params):
        """Wallet-prediction samples of one metric: chance, price or last_trade."""
        params = self._times(params)
        params["metric"] = metric
        return self._paged("/v3/wallet-prediction/%s/timeseries" % self._q(market_id), params)

    def coverage(self, family=None, market_id=None, ticker=None, **params):
        """Coverage of every market, or of one (market_id / ticker: a single item)."""
        params = dict(self._times(params), family=family, market_id=market_id, ticker=ticker)
        if market_id is not None or ticker is not None:
            yield self._json("/v3/coverage", params)["data"]
            return
        for item in self._paged("/v3/coverage", params):
            yield item

    def datasets(self, **params):
        """Parquet files: {path, rows, bytes, sha256, min_time, max_time}; filters family, start_date, end_date."""
        return self._paged("/v3/datasets", params)

    def dataset_rows(self, family, dataset, market_id, start_time, end_time):
        """One market's rows of a dataset (book_changes, trades, gaps, metrics, catalog; yes/no: market_id
        is the ticker) with receive time in [start_time, end_time), as the bytes of one Arrow IPC stream
        with the dataset's columns: pyarrow.ipc.open_stream(b).read_all() or polars.read_ipc_stream(b).
        A body cut off mid-stream (no end marker) raises instead of being returned short."""
        key = "ticker" if family == "yesno-exchange" else "market_id"
        params = {"family": family, "dataset": dataset, key: market_id, "start_time": _time(start_time), "end_time": _time(end_time)}
        try:
            with self._open("/v3/datasets/rows", params) as r:
                body = r.read()
        except (http.client.IncompleteRead, ConnectionError) as e:
            raise PmtapeError(200, "cut_off", "/v3/datasets/rows: the stream was cut off (%s); ask again" % e) from None
        if body[-8:] != b"\xff\xff\xff\xff\x00\x00\x00\x00":
            raise PmtapeError(200, "cut_off", "/v3/datasets/rows: the stream was cut off (no end-of-stream marker); ask again")
        return body

    def latest(self, family, market_id, coin=None, **params):
        """The newest book (with stale), or as of as_of=; depth, outcome, clock."""
        return self._json(self._market_path(family, market_id, coin, "orderbook/latest"), self._times(params))["data"]

    def replay(self, family, market_ids=None, start_time=None, end_time=None, types=("book",), coin=None, window=None, depth=None, after=None):
        """`/v3/replay` lines, in order. market_ids: ids (yes/no: tickers), or coin= [window=] instead.

        A dropped connection is resumed after the last line yielded; the generator's return value
        (StopIteration.value) is the end line's `next` token.
        """
        if start_time is None:
            raise ValueError("replay needs start_time")
        if isinstance(market_ids, str):
            market_ids = [market_ids]
        ids_key = "ticker" if family == "yesno-exchange" else "market_id"
        params = {
            "family": family, ids_key: market_ids, "coin": coin, "window": window, "start_time": _time(start_time),
            "end_time": _time(end_time), "types": list(types), "depth": depth,
        }
        failures = 0
        while True:
            try:
                resp = self._open("/v3/replay", dict(params, after=after))
            except PmtapeError:
                raise
            except _DROPPED:
                failures += 1
                if failures > self.max_resumes:
                    raise
                time.sleep(min(0.2 * 2 ** failures, 5.0))
                continue
            progressed = False
            try:
                with resp:
                    for raw in resp:
                        if not raw.endswith(b"\n"):
                            break  # a cut-off last line: resume before it
                        line = json.loads(raw.decode("utf-8"))
                        kind = line.get("type")
                        if kind == "end":
                            return line["next"]
                        if kind == "error":
                            e = line["error"]
                            raise PmtapeError(e.get("status", 500), e.get("code", "internal"), e.get("message", ""), e.get("request_id"))
                        after = replay_token(line)
                        progressed = True
                        failures = 0
                        yield line
            except _DROPPED:
                pass
            if not progressed:
                failures += 1
                if failures > self.max_resumes:
                    raise PmtapeError(0, "stream_incomplete", "the replay stopped %d times without a new line" % failures)
            time.sleep(min(0.1 * 2 ** failures, 5.0))


# -- flattening --------------------------------------------------------------------------------


def _num(x):
    return float(x) if x is not None else None


def _book_row(base, bids, asks):
    """Best bid/ask, mid, spread and depth sums of one book given as [[price, size], ...] best first."""
    bb = _num(bids[0][0]) if bids else None
    ba = _num(asks[0][0]) if asks else None
    row = dict(base)
    row.update(
        best_bid=bb,
        best_ask=ba,
        mid=(bb + ba) / 2 if bb is not None and ba is not None else None,
        spread=(ba - bb) if bb is not None and ba is not None else None,
        bid_depth=sum(_num(s) for _, s in bids),
        ask_depth=sum(_num(s) for _, s in asks),
    )
    return row


def flatten(items):
    """Snapshot objects or replay lines -> one dict per outcome book (best bid/ask, mid, spread, depth sums).

    Replay lines other than book and book_snapshot_* are skipped. Yes/no books become the YES side:
    bids are YES bids, asks are 1 - NO bids (the venue's two bid ladders).
    """
    rows = []
    for it in items:
        kind = it.get("type")
        if kind is not None and "data" in it:
            if kind != "book" and not str(kind).startswith("book_snapshot_"):
                continue
            snap = it["data"]
        else:
            kind, snap = "book", it
        base = {
            "type": kind,
            "market_id": snap.get("market_id", snap.get("ticker")),
            "seq": snap.get("seq"),
            "receive_time": snap.get("receive_time"),
            "source_time": snap.get("source_time", snap.get("observed_time")),
        }
        if "bucket_start" in snap:
            base["bucket_start"] = snap["bucket_start"]
        if "books" in snap:
            for b in snap["books"]:
                rows.append(_book_row(dict(base, outcome=b["outcome"]), b["bids"], b["asks"]))
        elif "bids" in snap:
            rows.append(_book_row(dict(base, outcome=snap.get("outcome")), snap["bids"], snap["asks"]))
        elif "yes" in snap:
            yes = list(zip(snap["yes"]["prices"], snap["yes"]["sizes"]))
            no = list(zip(snap["no"]["prices"], snap["no"]["sizes"]))
            scale = 100.0 if snap.get("units") == "cents" else 1.0
            asks = [[scale - float(p), s] for p, s in no]
            rows.append(_book_row(dict(base, outcome="Yes"), yes, asks))
    return rows


def to_dataframe(items):
    """flatten(items) as a pandas DataFrame (times parsed as UTC). Needs pandas."""
    if pandas is None:
        raise ImportError("to_dataframe needs pandas (pip install pandas); flatten() gives the same rows as dicts")
    df = pandas.DataFrame(flatten(items))
    for col in ("receive_time", "source_time", "bucket_start"):
        if col in df:
            df[col] = pandas.to_datetime(df[col], utc=True)
    return df
