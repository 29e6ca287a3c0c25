// The `clob` + `catalog` mounts of the sim sharing one market model (or one replayed capture), so
// the catalogue lists exactly the markets whose books the WebSocket streams. The model also runs
// the unlisted coins (default `sol`), which the written config omits: only discovery finds them.

import { MarketModel } from './market-model.js';
import { catalogMount } from './catalog.js';
import { clobMount, modelSource } from './clob.js';
import { replaySource, replayCatalogMount } from './replay.js';
import type { SimContext, SimMount } from './mount.js';

export function coinVenueMounts(ctx: SimContext): SimMount[] {
  const coins = ctx.opts.coins ?? ['btc', 'eth', 'bnb'];
  const windows = ctx.opts.windows ?? ['5m', '15m'];
  const extra = { coins: [...coins], windows: [...windows] };
  if (ctx.opts.replay) {
    const src = replaySource(ctx.opts.replay, ctx.opts.replaySpeed ?? 1);
    const clob = clobMount(ctx, src);
    const cat = replayCatalogMount(src);
    return [{ ...clob, config: (b) => ({ ...clob.config!(b), coins: src.coins(), windows: src.windows() }) }, cat];
  }
  // Unlisted coins go last so the configured coins keep their market ids.
  const unlisted = (ctx.opts.unlistedCoins ?? ['sol']).filter((c) => !coins.includes(c));
  const model = new MarketModel([...coins, ...unlisted], windows, ctx.windowScale, ctx.random('model'), ctx.seed);
  const clob = clobMount(ctx, modelSource(model, ctx.opts.rate ?? 100, ctx.random('clob-rate')));
  return [{ ...clob, config: (b) => ({ ...clob.config!(b), ...extra }) }, catalogMount(model)];
}
