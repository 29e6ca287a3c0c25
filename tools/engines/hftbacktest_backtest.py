"""A pmtape day in hftbacktest: Tardis-format files -> hftbacktest.data.utils.tardis.convert -> a backtest
with a queue model.

Usage (the hftbacktest venv of tools/toolchains/python.ts, or any Python with hftbacktest==2.4.4):

    python tools/engines/hftbacktest_backtest.py --book <..._incremental_book_L2_<day>_<SYMBOL>.csv.gz> \
        --trades <..._trades_<day>_<SYMBOL>.csv.gz> --tick-size 0.01 [--instants 1785000000000000,...] \
        [--queue risk_adverse|power_prob] [--quote-size 10] [--npz out.npz]

Prints one JSON object: the events convert made, the orders the strategy placed and the fills it got, and
the book hftbacktest held at each instant (µs since the epoch; every tick of the 0..1 price range is read,
so the whole book is there), levels best first as decimal strings. docs/engines.md explains each step.

What a reader of these files must know for hftbacktest:
- convert picks a file's kind by `trades` / `incremental_book_L2` in its name, so keep the names the
  export (or the tardis-dev clients) gave; trades go first in the list (its docs say why).
- Prices become integer ticks of `tick_size`: give the finest tick the market had that day.
- At a snapshot convert clears each side only down to the snapshot's deepest price: the script widens
  those clears to the whole side (whole_side_clears), as Tardis's rule and pmtape's book say.
- Within one file convert keeps at most as many levels of a snapshot as the file's first snapshot had
  (its snapshot buffers shrink): the script hands it the book file cut at each snapshot (snapshot_chunks).
- Its clock is the local (receive) timestamp in ns; convert moves every local timestamp later if any
  receive time precedes its exchange time (correct_local_timestamp), which pmtape's files never need.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import sys
import tempfile
from decimal import Decimal

import numpy as np
from numba import njit

from hftbacktest import GTC, LIMIT, BacktestAsset, HashMapMarketDepthBacktest
from hftbacktest.data.utils import tardis
from hftbacktest.types import BUY_EVENT, DEPTH_CLEAR_EVENT


def snapshot_chunks(path: str, folder: str) -> list[str]:
    """The book file cut where each snapshot starts, as plain CSV files convert reads in order. convert's
    snapshot buffers shrink to the first snapshot's size within one file (2.4.4's _convert_depth rebinds
    them to a slice), so a later, larger snapshot lost its deeper levels; each piece starts afresh."""
    out: list[str] = []
    dst = None
    prev_snap = False
    with gzip.open(path, "rt", newline="") as src:
        header = src.readline()
        for line in src:
            snap = line.split(",", 5)[4] == "true"
            if dst is None or (snap and not prev_snap):
                if dst is not None:
                    dst.close()
                out.append(os.path.join(folder, f"{len(out):06d}_incremental_book_L2.csv"))
                dst = open(out[-1], "w", newline="")
                dst.write(header)
            prev_snap = snap
            dst.write(line)
    if dst is not None:
        dst.close()
    return out


def whole_side_clears(data: np.ndarray) -> int:
    """convert clears a side, at a snapshot, only down to the snapshot's deepest price, so a deeper level
    of the old book survives; Tardis's rule (and pmtape's book) restarts the whole book. Prices are
    probabilities, so a bid clear down to 0 and an ask clear up to 1 clear the whole side."""
    clears = (data["ev"] & 0xFF) == DEPTH_CLEAR_EVENT
    buys = (data["ev"] & BUY_EVENT) != 0
    data["px"][clears & buys] = 0.0
    data["px"][clears & ~buys] = 1.0
    return int(clears.sum())


def rows_of(path: str) -> int:
    with gzip.open(path, "rt") as f:
        return sum(1 for _ in f)


@njit
def run(hbt, instants_ns, nticks, quote_qty, step_ns, bid_out, ask_out, stats):
    """Join the best bid and ask (GTC limits) each step, re-quoting when the top moves; at each instant copy
    the depth of every tick into bid_out/ask_out. stats: [orders placed, fills (state num_trades)]."""
    next_id = 1
    quoted_bid = -1
    quoted_ask = -1
    k = 0
    while True:
        now = hbt.current_timestamp
        target = now + step_ns
        if k < len(instants_ns) and instants_ns[k] < target:
            target = instants_ns[k]
        if target <= now:
            target = now + 1
        if hbt.elapse(target - now) != 0:
            break
        depth = hbt.depth(0)
        if k < len(instants_ns) and hbt.current_timestamp >= instants_ns[k]:
            for t in range(nticks + 1):
                bid_out[k, t] = depth.bid_qty_at_tick(t)
                ask_out[k, t] = depth.ask_qty_at_tick(t)
            k += 1
        bb = depth.best_bid_tick
        ba = depth.best_ask_tick
        if bb <= 0 or ba >= nticks or bb >= ba:
            continue
        if bb == quoted_bid and ba == quoted_ask:
            continue
        hbt.clear_inactive_orders(0)
        orders = hbt.orders(0)
        values = orders.values()
        while values.has_next():
            o = values.get()
            if o.cancellable:
                hbt.cancel(0, o.order_id, False)
        hbt.submit_buy_order(0, next_id, bb * depth.tick_size, quote_qty, GTC, LIMIT, False)
        hbt.submit_sell_order(0, next_id + 1, ba * depth.tick_size, quote_qty, GTC, LIMIT, False)
        next_id += 2
        stats[0] += 2
        quoted_bid = bb
        quoted_ask = ba
    stats[1] = hbt.state_values(0).num_trades
    return k


def decimal_text(x: float, places: int) -> str:
    d = Decimal(f"{x:.{places}f}").normalize()
    return format(d, "f")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--book", required=True, help="an incremental_book_L2 .csv.gz file")
    p.add_argument("--trades", help="the same symbol's trades .csv.gz file")
    p.add_argument("--tick-size", required=True, help="the market's finest tick size that day, e.g. 0.01")
    p.add_argument("--lot-size", default="0.01", help="the size step (shares), e.g. 0.01")
    p.add_argument("--instants", default="", help="comma-separated µs instants at which to record the book")
    p.add_argument("--queue", default="risk_adverse", choices=["risk_adverse", "power_prob"], help="queue position model")
    p.add_argument("--quote-size", default="10", help="shares per quote")
    p.add_argument("--step-ms", type=int, default=100, help="how often the strategy looks at the book")
    p.add_argument("--npz", help="also save convert's events here (hftbacktest's npz format)")
    args = p.parse_args()

    rows = sum(rows_of(f) for f in [args.book] + ([args.trades] if args.trades else []))
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(sys.stderr):  # stdout is the JSON result
        files = ([args.trades] if args.trades else []) + snapshot_chunks(args.book, tmp)
        # Buffers sized from the files (convert's defaults reserve 100 M events).
        data = tardis.convert(files, output_filename=args.npz, buffer_size=2 * rows + 16, ss_buffer_size=rows + 16)

    clears = whole_side_clears(data)
    tick = Decimal(args.tick_size)
    nticks = int(Decimal(1) / tick)
    asset = (
        BacktestAsset()
        .data([data])
        .linear_asset(1.0)
        .constant_order_latency(0, 0)
        .no_partial_fill_exchange()
        .trading_value_fee_model(0.0, 0.0)
        .tick_size(float(tick))
        .lot_size(float(args.lot_size))
        .last_trades_capacity(0)
    )
    asset = asset.risk_adverse_queue_model() if args.queue == "risk_adverse" else asset.power_prob_queue_model(3.0)
    hbt = HashMapMarketDepthBacktest([asset])

    instants = np.array(sorted(int(x) * 1000 for x in args.instants.split(",") if x), dtype=np.int64)
    bid_out = np.zeros((len(instants), nticks + 1), np.float64)
    ask_out = np.zeros((len(instants), nticks + 1), np.float64)
    stats = np.zeros(2, np.int64)
    seen = run(hbt, instants, nticks, float(args.quote_size), args.step_ms * 1_000_000, bid_out, ask_out, stats)
    hbt.close()

    places = max(0, -Decimal(args.lot_size).normalize().as_tuple().exponent) + 6
    books = []
    for k in range(seen):
        level = lambda t, q: [format((tick * t).normalize(), "f"), decimal_text(q, places)]
        bids = [level(t, bid_out[k, t]) for t in range(nticks, -1, -1) if bid_out[k, t] > 0]
        asks = [level(t, ask_out[k, t]) for t in range(nticks + 1) if ask_out[k, t] > 0]
        books.append({"t_us": int(instants[k]) // 1000, "bids": bids, "asks": asks})
    print(json.dumps({"events": int(len(data)), "clears": clears, "orders": int(stats[0]), "fills": int(stats[1]), "books": books}))


if __name__ == "__main__":
    main()
