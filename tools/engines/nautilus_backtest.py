"""A pmtape day in NautilusTrader: Tardis-format files -> TardisCSVDataLoader -> BacktestEngine (L2_MBP).

Usage (the nautilus venv of tools/toolchains/python.ts, or any Python with nautilus-trader==1.221.0):

    python tools/engines/nautilus_backtest.py --book <..._incremental_book_L2_<day>_<SYMBOL>.csv.gz> \
        --trades <..._trades_<day>_<SYMBOL>.csv.gz> --tick-size 0.01 [--outcome Up] [--question "..."] \
        [--instants 1785000000000000,...] [--depth 0] [--quote-size 10]

Prints one JSON object: how many deltas, batches and trades were loaded, the orders the market-making
strategy placed and the fills it got, and the book the strategy saw at each instant (µs since the epoch),
levels best first as decimal strings. docs/engines.md explains each step; the pmtape suite runs it
(test/engines/) and compares those books with the API's.

Two things the loader needs that pmtape's files cannot give it:
- Its CSV reader parses `exchange` into NautilusTrader's fixed list of Tardis's crypto exchanges, so a
  pmtape exchange (`pmtape-clob`, ...) is refused. The instrument id given to the loader replaces the venue
  anyway, so the loader gets a copy whose first column says `deribit` (a name it knows; nothing else changes).
- It turns `is_snapshot` rows into `Add` deltas without clearing the book first; Tardis's rule is that a
  book restarts where `is_snapshot` turns from false to true, so a `Clear` is put before each snapshot run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import tempfile
from decimal import Decimal

from nautilus_trader.adapters.tardis import TardisCSVDataLoader
from nautilus_trader.backtest.engine import BacktestEngine, BacktestEngineConfig
from nautilus_trader.backtest.models import FillModel
from nautilus_trader.config import LoggingConfig, StrategyConfig
from nautilus_trader.model.currencies import USDC
from nautilus_trader.model.data import OrderBookDelta, OrderBookDeltas
from nautilus_trader.model.enums import AccountType, AssetClass, BookAction, BookType, OmsType, OrderSide, RecordFlag, TimeInForce
from nautilus_trader.model.identifiers import InstrumentId, Symbol, TraderId, Venue
from nautilus_trader.model.instruments import BinaryOption
from nautilus_trader.model.objects import Money, Price, Quantity
from nautilus_trader.trading.strategy import Strategy

# A name NautilusTrader's TardisExchange enum knows; only parsed, then replaced by the instrument id.
PLACEHOLDER_EXCHANGE = "deribit"


def decimals(text: str) -> int:
    """Digits after the point of a decimal text (`0.010` -> 2: trailing zeros say nothing)."""
    d = Decimal(text).normalize()
    return max(0, -d.as_tuple().exponent)


def header_and_exchange(path: str) -> tuple[str, str]:
    with gzip.open(path, "rt", newline="") as f:
        header = f.readline()
        first = f.readline()
    return header, first.split(",", 1)[0] if first else ""


def loader_copy(path: str, folder: str) -> str:
    """The file with its `exchange` cells replaced by PLACEHOLDER_EXCHANGE (plain CSV: the loader reads both)."""
    out = os.path.join(folder, os.path.basename(path).removesuffix(".gz"))
    with gzip.open(path, "rt", newline="") as src, open(out, "w", newline="") as dst:
        dst.write(src.readline())
        for line in src:
            dst.write(PLACEHOLDER_EXCHANGE + line[line.index(",") :])
    return out


def size_precision_of(paths: list[str], column: str) -> int:
    """The most decimals any size in the files has: the instrument's size precision must hold them all."""
    best = 0
    for p in paths:
        with gzip.open(p, "rt", newline="") as f:
            cols = f.readline().rstrip("\r\n").split(",")
            i = cols.index(column)
            for line in f:
                cell = line.rstrip("\r\n").split(",")[i]
                if cell:
                    best = max(best, decimals(cell))
    return best


def with_last_flag(d: OrderBookDelta) -> OrderBookDelta:
    if d.flags & RecordFlag.F_LAST:
        return d
    return OrderBookDelta(d.instrument_id, d.action, d.order, d.flags | RecordFlag.F_LAST, d.sequence, d.ts_event, d.ts_init)


def batches(deltas: list[OrderBookDelta], instrument_id: InstrumentId) -> list[OrderBookDeltas]:
    """The loader's deltas as the batches the file meant. The loader ends a batch (F_LAST) only where
    `timestamp` (venue time) changes, but two records can share a venue time and arrive apart: a batch
    here also ends where `local_timestamp` (receive time, the backtest's clock) changes. A run of snapshot
    rows (Add) starts with a Clear, so the book restarts where Tardis's rule says."""
    out: list[OrderBookDeltas] = []
    cur: list[OrderBookDelta] = []
    prev_add = False
    for i, d in enumerate(deltas):
        is_add = d.action == BookAction.ADD
        if is_add and not prev_add:
            cur.append(OrderBookDelta.clear(instrument_id, 0, d.ts_event, d.ts_init))
        prev_add = is_add
        nxt = deltas[i + 1] if i + 1 < len(deltas) else None
        if nxt is None or d.flags & RecordFlag.F_LAST or nxt.ts_init != d.ts_init:
            cur.append(with_last_flag(d))
            out.append(OrderBookDeltas(instrument_id, cur))
            cur = []
        else:
            cur.append(d)
    return out


def binary_option(instrument_id: InstrumentId, tick: str, size_precision: int, outcome: str, question: str) -> BinaryOption:
    """The instrument as NautilusTrader's own Polymarket adapter makes one: a BinaryOption in USDC whose
    price increment is the market's tick size; sizes are shares at the precision the data needs."""
    increment = Price.from_str(tick)
    return BinaryOption(
        instrument_id=instrument_id,
        raw_symbol=instrument_id.symbol,
        outcome=outcome or None,
        description=question or str(instrument_id.symbol),
        asset_class=AssetClass.ALTERNATIVE,
        currency=USDC,
        price_increment=increment,
        price_precision=increment.precision,
        size_increment=Quantity.from_str("1" if size_precision == 0 else "0." + "0" * (size_precision - 1) + "1"),
        size_precision=size_precision,
        activation_ns=0,
        expiration_ns=0,
        max_quantity=None,
        min_quantity=None,
        maker_fee=Decimal(0),
        taker_fee=Decimal(0),
        ts_event=0,
        ts_init=0,
    )


class MakerConfig(StrategyConfig, frozen=True):
    instrument_id: InstrumentId
    quote_size: Decimal
    instants_ns: tuple[int, ...] = ()
    depth: int = 0
    requote_ticks: int = 2


class JoinTheBest(Strategy):
    """Simple market making: one GTC limit order on each side, placed at the best bid / best ask; a quote the
    market moves away from (more than `requote_ticks` ticks) is cancelled and placed again at the new best,
    one the market comes to stays and fills when the L2 book moves through it (or a trade prints at it).
    At each instant it writes down the book the engine keeps for it (a time alert, so the book is the one
    after every batch received before the instant)."""

    def __init__(self, config: MakerConfig) -> None:
        super().__init__(config)
        self.iid = config.instrument_id
        self.seen: list[dict] = []
        self.fills = 0
        self.orders = 0
        self.batches = 0
        self.live: dict = {}

    def on_start(self) -> None:
        self.instrument = self.cache.instrument(self.iid)
        self.subscribe_order_book_deltas(self.iid, book_type=BookType.L2_MBP)
        for i, t in enumerate(self.config.instants_ns):
            self.clock.set_time_alert_ns(f"book-{i}", t, self.on_instant)

    def on_instant(self, event) -> None:
        book = self.cache.order_book(self.iid)
        n = self.config.depth or None
        side = lambda levels: [[str(lv.price), str(sum((o.size for o in lv.orders()), Quantity.zero(self.instrument.size_precision)))] for lv in levels[:n]]
        self.seen.append({"t_ns": event.ts_event, "bids": side(book.bids()) if book else [], "asks": side(book.asks()) if book else []})

    def on_order_book_deltas(self, deltas: OrderBookDeltas) -> None:
        self.batches += 1
        book = self.cache.order_book(self.iid)
        bid, ask = book.best_bid_price(), book.best_ask_price()
        if bid is None or ask is None or bid >= ask:
            return
        far = self.instrument.price_increment * self.config.requote_ticks
        qty = self.instrument.make_qty(self.config.quote_size)
        for side, best in ((OrderSide.BUY, bid), (OrderSide.SELL, ask)):
            order = self.live.get(side)
            if order is not None and not order.is_closed:
                # A quote the market moved away from is moved back; one the market comes to is left to fill.
                away = best - order.price if side == OrderSide.BUY else order.price - best
                if order.is_open and away > far:
                    self.cancel_order(order)
                continue
            order = self.order_factory.limit(self.iid, side, qty, best, time_in_force=TimeInForce.GTC)
            self.submit_order(order)
            self.live[side] = order
            self.orders += 1

    def on_order_filled(self, event) -> None:
        self.fills += 1

    def on_stop(self) -> None:
        self.cancel_all_orders(self.iid)


def run(args: argparse.Namespace) -> dict:
    _, exchange = header_and_exchange(args.book)
    # A venue name is the account id's issuer, which ends at the first `-`: `pmtape-clob` -> PMTAPE_CLOB.
    venue = Venue((exchange or "PMTAPE").upper().replace("-", "_"))
    iid = InstrumentId(Symbol(args.symbol), venue)
    files = [args.book] + ([args.trades] if args.trades else [])
    size_precision = max(size_precision_of([args.book], "amount"), size_precision_of([args.trades], "amount") if args.trades else 0)
    instrument = binary_option(iid, args.tick_size, size_precision, args.outcome, args.question)

    with tempfile.TemporaryDirectory() as tmp:
        loader = TardisCSVDataLoader(price_precision=instrument.price_precision, size_precision=size_precision, instrument_id=iid)
        deltas = loader.load_deltas(loader_copy(args.book, tmp))
        trades = loader.load_trades(loader_copy(args.trades, tmp)) if args.trades else []
    data = batches(deltas, iid)

    engine = BacktestEngine(BacktestEngineConfig(trader_id=TraderId("PMTAPE-001"), logging=LoggingConfig(log_level="ERROR")))
    engine.add_venue(
        venue=venue,
        oms_type=OmsType.NETTING,
        account_type=AccountType.MARGIN,
        base_currency=USDC,
        starting_balances=[Money(1_000_000, USDC)],
        book_type=BookType.L2_MBP,
        fill_model=FillModel(prob_fill_on_limit=1.0, prob_slippage=0.0, random_seed=42),
        trade_execution=True,
    )
    engine.add_instrument(instrument)
    engine.add_data(data)
    if trades:
        engine.add_data(trades)
    strategy = JoinTheBest(MakerConfig(instrument_id=iid, quote_size=Decimal(args.quote_size), instants_ns=tuple(int(t) * 1000 for t in args.instants), depth=args.depth))
    engine.add_strategy(strategy)
    engine.run()
    result = {
        "instrument_id": str(iid),
        "price_precision": instrument.price_precision,
        "size_precision": size_precision,
        "deltas": len(deltas),
        "batches": len(data),
        "trades": len(trades),
        "batches_seen": strategy.batches,
        "orders": strategy.orders,
        "fills": strategy.fills,
        "books": [{"t_us": b["t_ns"] // 1000, "bids": b["bids"], "asks": b["asks"]} for b in strategy.seen],
    }
    engine.dispose()
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--book", required=True, help="an incremental_book_L2 .csv.gz file")
    p.add_argument("--trades", help="the same symbol's trades .csv.gz file")
    p.add_argument("--symbol", help="the instrument's symbol (default: the file's SYMBOL)")
    p.add_argument("--tick-size", required=True, help="the market's tick size (its catalogue's), e.g. 0.01")
    p.add_argument("--outcome", default="", help="the outcome label the symbol names")
    p.add_argument("--question", default="", help="the market's question")
    p.add_argument("--instants", default="", help="comma-separated µs instants at which to record the book")
    p.add_argument("--depth", type=int, default=0, help="levels per side recorded (0 = all)")
    p.add_argument("--quote-size", default="10", help="shares per quote")
    args = p.parse_args()
    args.instants = [int(x) for x in args.instants.split(",") if x]
    if not args.symbol:
        args.symbol = os.path.basename(args.book).removesuffix(".csv.gz").split("_")[-1]
    print(json.dumps(run(args)))


if __name__ == "__main__":
    main()
