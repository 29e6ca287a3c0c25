// Depth chart of one book on a <canvas>: cumulative size stepping away from the mid on each side.
// Also turns the three families' book shapes into one {bids, asks} of numbers (probability prices),
// so the chart itself knows nothing about venues.

/**
 * One family's snapshot object (REST or stream `data`) → {bids, asks} as [price, size] numbers, of
 * `outcome` when the snapshot holds several (coin; null if that outcome's book is not valid), else of
 * its first.
 */
export function bookOf(family, snap, outcome) {
  if (!snap) return null;
  if (family === 'yesno-exchange') {
    const scale = snap.units === 'cents' ? 100 : 1;
    const ladder = (side) => {
      if (!side || !Array.isArray(side.prices)) return [];
      return side.prices.map((p, i) => [Number(p) / scale, Number(side.sizes?.[i] ?? 0)]);
    };
    // Both sides are bid ladders: a NO bid at q is a YES ask at 1 − q.
    const asks = ladder(snap.no).map(([q, s]) => [1 - q, s]);
    return { bids: ladder(snap.yes), asks };
  }
  const src = Array.isArray(snap.books) ? (outcome ? snap.books.find((b) => b.outcome === outcome) : snap.books[0]) : snap;
  if (!src || !Array.isArray(src.bids) || !Array.isArray(src.asks)) return null;
  const nums = (l) => l.map(([p, s]) => [Number(p), Number(s)]).filter(([p, s]) => Number.isFinite(p) && Number.isFinite(s));
  return { bids: nums(src.bids), asks: nums(src.asks) };
}

function cumulative(levels, dir) {
  const sorted = [...levels].sort((a, b) => dir * (a[0] - b[0]));
  let total = 0;
  return sorted.map(([p, s]) => [p, (total += s)]);
}

/**
 * Draws `book` on `canvas`; returns how many levels were drawn (also kept in data-levels). Without
 * levels it writes `empty` instead (why there is no book).
 */
export function drawDepth(canvas, book, empty = 'no book recorded yet') {
  const ctx = canvas.getContext('2d');
  const W = canvas.width,
    H = canvas.height,
    pad = { l: 56, r: 12, t: 12, b: 28 };
  ctx.clearRect(0, 0, W, H);
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, W, H);
  const bids = cumulative(book?.bids ?? [], -1); // best (highest) first
  const asks = cumulative(book?.asks ?? [], 1); // best (lowest) first
  const n = bids.length + asks.length;
  canvas.dataset.levels = String(n);
  if (n === 0) {
    ctx.fillStyle = '#6e7781';
    ctx.font = '14px system-ui, sans-serif';
    ctx.textAlign = 'center';
    ctx.fillText(empty, W / 2, H / 2);
    ctx.textAlign = 'start';
    return 0;
  }
  const prices = [...bids, ...asks].map((l) => l[0]);
  let lo = Math.min(...prices),
    hi = Math.max(...prices);
  if (hi - lo < 0.02) {
    lo -= 0.01;
    hi += 0.01;
  }
  // Room beyond the outermost levels, where each side's total runs flat to the edge.
  const margin = (hi - lo) * 0.06;
  const probability = lo >= 0 && hi <= 1; // keep a probability axis inside [0, 1]
  lo -= margin;
  hi += margin;
  if (probability) {
    lo = Math.max(0, lo);
    hi = Math.min(1, hi);
  }
  const maxQ = Math.max(bids.at(-1)?.[1] ?? 0, asks.at(-1)?.[1] ?? 0) || 1;
  const x = (p) => pad.l + ((p - lo) / (hi - lo)) * (W - pad.l - pad.r);
  const y = (q) => H - pad.b - (q / maxQ) * (H - pad.t - pad.b);

  // Axes and a few ticks: enough to read prices and sizes without a charting library.
  ctx.strokeStyle = '#d0d7de';
  ctx.fillStyle = '#6e7781';
  ctx.font = '11px system-ui, sans-serif';
  ctx.beginPath();
  ctx.moveTo(pad.l, pad.t);
  ctx.lineTo(pad.l, H - pad.b);
  ctx.lineTo(W - pad.r, H - pad.b);
  ctx.stroke();
  for (let i = 0; i <= 4; i++) {
    const p = lo + ((hi - lo) * i) / 4,
      q = (maxQ * i) / 4;
    ctx.fillText(p.toFixed(3), Math.min(x(p) - 14, W - pad.r - 32), H - 10);
    ctx.fillText(q >= 1000 ? `${(q / 1000).toFixed(1)}k` : q.toFixed(0), 6, y(q) + 4);
  }

  const side = (levels, color, edge) => {
    if (levels.length === 0) return;
    ctx.beginPath();
    ctx.moveTo(x(levels[0][0]), y(0));
    let prevQ = 0;
    for (const [p, q] of levels) {
      ctx.lineTo(x(p), y(prevQ));
      ctx.lineTo(x(p), y(q));
      prevQ = q;
    }
    ctx.lineTo(x(edge), y(prevQ));
    ctx.lineTo(x(edge), y(0));
    ctx.closePath();
    ctx.globalAlpha = 0.25;
    ctx.fillStyle = color;
    ctx.fill();
    ctx.globalAlpha = 1;
    ctx.strokeStyle = color;
    ctx.lineWidth = 2;
    ctx.stroke();
  };
  side(bids, '#1a7f37', lo);
  side(asks, '#cf222e', hi);
  return n;
}
