// 5. Culling a WebGL view to a window around it: see gs-0-core.js.
(function () {
  'use strict';
  const gs = window.graphscopePage = window.graphscopePage || {};

  // 5. Culling: see the top. Plotly draws what a trace holds; the page holds the rest.
  const CULL_MIN = 500;     // a trace of fewer points is drawn whole
  const CULL_MARGIN = 0.5;  // the window: the view and this much of it again on each side

  // A layout's axis ranges as [x0, x1, y0, y1], low to high; null where one is not set, or,
  // with `open`, that axis unbounded (a figure that fits its graph's rows leaves y to
  // autorange: it is culled along x alone).
  function rangesOf(xa, ya, open) {
    const axis = (a) => {
      const r = a && Array.isArray(a.range) ? a.range.map(Number) : [];
      if (r.length === 2 && r.every(Number.isFinite)) return [Math.min(...r), Math.max(...r)];
      return open ? [-Infinity, Infinity] : null;
    };
    const [x, y] = [axis(xa), axis(ya)];
    return x && y && (Number.isFinite(x[0]) || Number.isFinite(y[0])) ? [...x, ...y] : null;
  }

  function windowAround(r) {
    const w = (r[1] - r[0]) * CULL_MARGIN, h = (r[3] - r[2]) * CULL_MARGIN;
    return [r[0] - w, r[1] + w, r[2] - h, r[3] + h];
  }

  function within(r, win) {
    return r[0] >= win[0] && r[1] <= win[1] && r[2] >= win[2] && r[3] <= win[3];
  }

  // The trace with each per-point array (x, y, customdata, meta, hovertext, marker sizes and
  // colours: any of the trace's length) cut to the points at `keep`.
  function pick(t, keep) {
    const n = t.x.length;
    const cut = (obj, skip) => {
      const out = Object.assign({}, obj);
      for (const k of Object.keys(obj)) {
        if (!skip.includes(k) && Array.isArray(obj[k]) && obj[k].length === n) {
          out[k] = keep.map((i) => obj[k][i]);
        }
      }
      return out;
    };
    const out = cut(t, ['marker']);
    if (t.marker && typeof t.marker === 'object') out.marker = cut(t.marker, ['colorscale']);
    return out;
  }

  // The nodes in the window, and each axis's outermost node: Plotly's autoscale then still
  // fits the whole graph, not the window.
  function cullPoints(t, win) {
    const xs = t.x, ys = t.y, keep = [];
    let [ix0, ix1, iy0, iy1] = [0, 0, 0, 0];
    for (let i = 0; i < xs.length; i++) {
      const x = xs[i], y = ys[i];
      if (x < xs[ix0]) ix0 = i;
      if (x > xs[ix1]) ix1 = i;
      if (y < ys[iy0]) iy0 = i;
      if (y > ys[iy1]) iy1 = i;
      if (x >= win[0] && x <= win[1] && y >= win[2] && y <= win[3]) keep.push(i);
    }
    const kept = new Set(keep);
    for (const i of new Set([ix0, ix1, iy0, iy1])) if (!kept.has(i)) keep.push(i);
    return pick(t, keep);
  }

  // The segments of a line trace (polylines split by nulls) that reach into the window,
  // joined again where they follow one another.
  function cullSegments(t, win) {
    const xs = t.x, ys = t.y, ox = [], oy = [];
    let joined = false;  // whether the last segment kept ends where this one starts
    for (let i = 0; i + 1 < xs.length; i++) {
      const x0 = xs[i], y0 = ys[i], x1 = xs[i + 1], y1 = ys[i + 1];
      if (x0 === null || x1 === null || y0 === null || y1 === null ||
          Math.max(x0, x1) < win[0] || Math.min(x0, x1) > win[1] ||
          Math.max(y0, y1) < win[2] || Math.min(y0, y1) > win[3]) {
        joined = false;
        continue;
      }
      if (!joined) {
        if (ox.length) {
          ox.push(null);
          oy.push(null);
        }
        ox.push(x0);
        oy.push(y0);
      }
      ox.push(x1);
      oy.push(y1);
      joined = true;
    }
    return Object.assign({}, t, {x: ox, y: oy});
  }

  // The traces Plotly is given for `win`. A trace the server has not changed since the last
  // call, for the same window, is the same object as before, so Plotly.react leaves it be.
  function cullAll(gd, full, win) {
    const last = gd.__gsCull && gd.__gsCull.win.every((v, i) => v === win[i]) ? gd.__gsCull : null;
    const drawn = full.map((t, i) => {
      if (last && last.full[i] === t) return last.drawn[i];
      if (!t || !Array.isArray(t.x) || !Array.isArray(t.y) || t.x.length <= CULL_MIN) return t;
      const lines = typeof t.mode === 'string' && t.mode.includes('lines') &&
        !t.mode.includes('markers');
      return (lines ? cullSegments : cullPoints)(t, win);
    });
    gd.__gsCull = {full, win, drawn};
    return drawn;
  }

  // After a pan or zoom: a new window once the view has left the last one. `__gsRecull`
  // says a redraw for it is on its way (benchmarks/bench_app.py waits for it).
  function recull(gd) {
    const last = gd.__gsCull;
    const r = last && rangesOf(gd._fullLayout.xaxis, gd._fullLayout.yaxis);
    if (!r || within(r, last.win)) return;
    gd.data = gs.takeRing(gd, cullAll(gd, last.full, windowAround(r)));
    gd.__gsRecull = true;
    window.Plotly.redraw(gd).then(() => { gd.__gsRecull = false; });
  }

  Object.assign(gs, {cullAll, cullPoints, cullSegments, pick, rangesOf, recull, windowAround, within});
})();
