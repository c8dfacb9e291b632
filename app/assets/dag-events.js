// What the DAG does on the page itself, between the server's redraws.
//
// 1. The DAG's dcc.Graph answers every plotly_relayout (each wheel step and drag) by echoing the
//    new axis ranges into its `figure` prop, and that re-renders the graph with Plotly.react: the
//    same view drawn twice. No callback reads the DAG's relayoutData or the ranges in its figure
//    (`uirevision` keeps the user's view across the server's redraws), so the listener dcc.Graph
//    binds after its first plot is dropped. Measured on tiny-llama's 212 labelled nodes in
//    headless Chromium: a zoom took 217 ms with the echo and 85 ms without. The timeline keeps
//    its listener: the server redraws its bars for the x range it reports.
// 2. The node labels are drawn here, not by Plotly: each node trace carries its nodes' labels
//    in `meta`, and a layer of SVG text over the plot area shows those of the nodes in view
//    (never more than MOST): of every node of a graph of at most LABEL_LIMIT nodes, and of a
//    larger graph once a zoom leaves each node room for its label (layout.meta.labels says
//    which). Plotly measures each of its text labels on every redraw: on tiny-llama's 212
//    labelled nodes (benchmarks/bench_app.py) a zoom took 200 ms with Plotly's labels and
//    157 ms with this layer. The edges' arrowheads are drawn here too, as one path
//    (figure._edges): Plotly's arrow markers were most of what was left, and the zoom is now
//    84 ms. The layer follows a drag as it moves (plotly_relayouting).
// 3. The minimap (figure.minimap) shows the DAG's view as a rectangle over the whole graph; a
//    click on it centres the view there, at the same zoom (found here, as a DAG click is). A
//    graph that opens whole has none; one that opens in part has it in the DAG's right
//    margin, kept for it (layout.meta.minimap): over the plot it hid nodes and took their clicks.
// 4. A click on the DAG is answered here: the node under the pointer goes to the `dag-pick`
//    store, shaped as Plotly's click data, for the server's callback. The figure's clickmode
//    is "none" in the page: Plotly's click searched for the point again (a hover pass, and
//    its label drawn) before it said which, 23 to 42 ms of each click on tiny-llama, and the
//    clickData it set went through Dash's dependency pass before the request went out.
// 5. A WebGL view (over figure.SVG_LIMIT nodes; layout.meta.cull) is drawn culled: of each
//    trace of more than CULL_MIN points, Plotly is given only the points and edge segments
//    in a window around the view, the view and half of it again on each side; the page keeps
//    the whole figure and gives Plotly a new window once the view leaves the old one. Every
//    pan and zoom redrew every point: on the 100,064-node graph expanded, 1,262 nodes are in
//    the opening view, and Chromium without a GPU draws WebGL in software.
// 6. The selection rings, of the DAG and of the timeline, are drawn here too. The server moves
//    each figure's trace named "selected" by a patch on every click; Plotly is given that
//    trace empty, always the same object, so the patch redraws nothing in Plotly, and the page
//    draws the ring from the figure. Measured on tiny-llama in headless Chromium: each click's
//    patches had Plotly redraw the DAG (62 to 76 ms) and the timeline (136 to 233 ms), busy
//    until 325 to 455 ms after the click, and the next key press or click waited for that.
(function () {
  'use strict';
  // Ids, trace names and limits shared with the server's figures: app/shared.py, given
  // to the page in its head before this script runs.
  const SHARED = window.graphscopeShared;
  const IDS = SHARED.ids;
  const MOST = SHARED.labelLimit;  // labels drawn at once
  const ROOM_PX = 40;   // px per x unit: labels alternate above and below, so each has two units
  const SVG = 'http://www.w3.org/2000/svg';
  const HEAD_PX = 8;    // an arrowhead's length

  // The layer over the plot area, made again if a new plot replaced the old one's container.
  function labelLayer(gd) {
    const holder = gd.querySelector('.svg-container');
    if (!holder) return null;
    let layer = holder.querySelector(':scope > svg.gs-labels');
    if (!layer) {
      layer = document.createElementNS(SVG, 'svg');
      layer.setAttribute('class', 'gs-labels');
      layer.style.cssText = 'position: absolute; pointer-events: none; overflow: hidden;';
    }
    // Over the plot, under Plotly's top layer (its hover labels, zoom box, menus): the second
    // of its main-svg elements, after the one that holds the plot.
    const top = holder.querySelectorAll(':scope > svg.main-svg')[1] || null;
    if (layer.nextSibling !== top || layer.parentNode !== holder) holder.insertBefore(layer, top);
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;  // over the plot area
    Object.assign(layer.style, {left: xa._offset + 'px', top: ya._offset + 'px'});
    layer.setAttribute('width', xa._length);
    layer.setAttribute('height', ya._length);
    return layer;
  }

  function drawLabels(gd) {
    const full = gd._fullLayout;
    // No data: the empty figure of a file that failed to load.
    if (!full || !full.xaxis || !gd._fullData || !Array.isArray(gd.data)) return;
    const layer = labelLayer(gd);
    if (!layer) return;
    const xa = full.xaxis, ya = full.yaxis;
    const [x0, x1] = [Math.min(...xa.range), Math.max(...xa.range)];
    const [ylo, yhi] = [Math.min(...ya.range), Math.max(...ya.range)];
    const always = full.meta && full.meta.labels === 'always';
    const found = [];
    if (always || xa._length / (x1 - x0) >= ROOM_PX) {
      scan: for (let i = 0; i < gd.data.length; i++) {
        const t = gd.data[i];
        // A trace hidden from its legend hides its labels too.
        if (!Array.isArray(t.meta) || !t.x || !gd._fullData[i] || gd._fullData[i].visible !== true) {
          continue;
        }
        const size = t.marker && t.marker.size;
        for (let j = 0; j < t.x.length; j++) {
          const x = t.x[j], y = t.y[j];
          if (x < x0 || x > x1 || y < ylo || y > yhi) continue;
          if (found.length === MOST) {  // too many to read: none, as when zoomed out
            found.length = 0;
            break scan;
          }
          const radius = (Array.isArray(size) ? size[j] : size || 11) / 2;
          found.push([x, y, t.meta[j], radius]);
        }
      }
    }
    const texts = document.createDocumentFragment();
    const right = full.meta && full.meta.side === 'right';  // a column of blocks
    for (const [x, y, label, radius] of found) {
      const text = document.createElementNS(SVG, 'text');
      if (right) {  // beside the node, clear of the edges above and below it
        text.setAttribute('x', (xa.l2p(x) + radius + 5).toFixed(1));
        text.setAttribute('y', (ya.l2p(y) + 3).toFixed(1));
        text.setAttribute('text-anchor', 'start');
      } else {
        // Below and above by turns along a row, as figure._above_or_below says.
        const below = Math.floor(x) % 2 === 0;
        text.setAttribute('x', xa.l2p(x).toFixed(1));
        text.setAttribute('y', (ya.l2p(y) + (below ? radius + 9 : -radius - 3)).toFixed(1));
        text.setAttribute('text-anchor', 'middle');
      }
      text.setAttribute('font-size', '9');
      text.setAttribute('fill', '#333333');
      text.setAttribute('font-family', '"Open Sans", verdana, arial, sans-serif');
      text.textContent = label;  // text, never markup: labels come from files
      texts.appendChild(text);
    }
    const heads = arrowheads(gd, xa, ya, x0, x1, ylo, yhi);
    if (heads) texts.appendChild(heads);
    for (const ring of ringMarks(gd)) texts.appendChild(ring);
    layer.replaceChildren(texts);
  }

  // The arrowheads of the edges ending in view, as one path: each edge is a segment of the
  // edges trace, [start, end, null], and its head points along it on the screen, whatever
  // the zoom's aspect. None for a graph Plotly draws with WebGL (figure.SVG_LIMIT).
  function arrowheads(gd, xa, ya, x0, x1, ylo, yhi) {
    if (!(gd._fullLayout.meta && gd._fullLayout.meta.arrows)) return null;
    const edges = gd.data.find((t) => t.name === SHARED.traces.edges);
    if (!edges || !edges.x) return null;
    const xs = edges.x, ys = edges.y, parts = [];
    for (let i = 0; i + 1 < xs.length; i += 3) {
      const ex = xs[i + 1], ey = ys[i + 1];
      if (ex < x0 || ex > x1 || ey < ylo || ey > yhi) continue;
      const px = xa.l2p(ex), py = ya.l2p(ey);
      const dx = px - xa.l2p(xs[i]), dy = py - ya.l2p(ys[i]);
      const norm = Math.hypot(dx, dy);
      if (!norm) continue;
      const ux = dx / norm, uy = dy / norm;
      const bx = px - HEAD_PX * ux, by = py - HEAD_PX * uy;
      const wx = -uy * HEAD_PX * 0.45, wy = ux * HEAD_PX * 0.45;
      parts.push(`M${px.toFixed(1)},${py.toFixed(1)}L${(bx + wx).toFixed(1)},` +
        `${(by + wy).toFixed(1)}L${(bx - wx).toFixed(1)},${(by - wy).toFixed(1)}Z`);
    }
    if (!parts.length) return null;
    const path = document.createElementNS(SVG, 'path');
    path.setAttribute('class', 'gs-arrowheads');
    path.setAttribute('d', parts.join(''));
    path.setAttribute('fill', '#9a9a9a');
    return path;
  }

  const SLOP_PX = 4;    // a press that moves further is a drag (a pan), not a click
  const REACH_PX = 3;   // how far outside its marker a click still takes a node

  // The key of the node whose marker is under (px, py), plot-area pixels: the nearest centre
  // among those within reach, as Plotly's hover would pick; none where the click is on no
  // marker (Plotly's 20 px hover distance took a node 50 ids away at 100,000 nodes). Rings
  // and marks (hoverinfo "skip") and traces hidden from the legend are not nodes to take.
  function nodeAt(gd, px, py) {  // [key, x, y] or null
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
    // Linear axes: a pixel is _m * value + _b (Plotly's own l2p), inlined for 100,000 points.
    const [mx, bx, my, by] = [xa._m, xa._b, ya._m, ya._b];
    if (![mx, bx, my, by].every(Number.isFinite) || !Array.isArray(gd.data)) return null;
    let best = null, bestDistance = Infinity;
    gd._fullData.forEach((full, i) => {
      const t = gd.data[i];
      if (full.visible !== true || full.hoverinfo === 'skip' || !t.customdata || !t.x) return;
      const size = t.marker && t.marker.size;
      const xs = t.x, ys = t.y;
      for (let j = 0; j < xs.length; j++) {
        const dx = mx * xs[j] + bx - px;
        const reach = (Array.isArray(size) ? size[j] : size || 11) / 2 + REACH_PX;
        if (dx > reach || dx < -reach) continue;
        const dy = my * ys[j] + by - py;
        if (dy > reach || dy < -reach) continue;
        const distance = Math.hypot(dx, dy);
        if (distance <= reach && distance < bestDistance) {
          best = [t.customdata[j], xs[j], ys[j]];
          bestDistance = distance;
        }
      }
    });
    return best && typeof best[0] === 'string' ? best : null;
  }

  // One pair of listeners for the page, on whichever DAG plot is drawn now: a listener per
  // plot would keep each replaced plot (a 100,000-node one among them) alive in its closure.
  // where the left button went down on the DAG's plot or the minimap's, if it did
  let down = null;
  function dagPlot() {
    return document.querySelector('#' + IDS.dag + ' .js-plotly-plot');
  }
  // Capture: before Plotly's own handlers, which start a drag on the plot.
  document.addEventListener('mousedown', (event) => {
    const plot = [dagPlot(), minimapOf()].find((p) => p && p.contains(event.target));
    down = event.button === 0 && plot ? [event.clientX, event.clientY, plot] : null;
  }, true);
  // On the document: once a press moves, Plotly covers the page with its drag layer.
  document.addEventListener('mouseup', (event) => {
    const start = down;
    down = null;
    const gd = dagPlot();
    if (!start || !gd || event.button !== 0 || !window.dash_clientside) return;
    if (Math.hypot(event.clientX - start[0], event.clientY - start[1]) > SLOP_PX) return;
    const plot = start[2];
    const area = plot.querySelector('.nsewdrag');  // the plot area, where a drag starts
    if (!area || !plot._fullLayout || !gd._fullLayout || !gd._fullData) return;
    const box = area.getBoundingClientRect();
    const px = event.clientX - box.left, py = event.clientY - box.top;
    if (px < 0 || py < 0 || px > box.width || py > box.height) return;
    if (plot !== gd) {  // the minimap: the DAG's view centred there
      centreOn(gd, plot._fullLayout.xaxis.p2l(px), plot._fullLayout.yaxis.p2l(py));
      return;
    }
    const found = nodeAt(gd, px, py);
    if (!found) return;
    // `at`: a second click on the same node is a change of the store too.
    window.dash_clientside.set_props('dag-pick', {data: {points: [{customdata: found[0]}],
                                                         at: Date.now()}});
    // The ring at once, where the server's answer will put it.
    if (gd.__gsRing) {
      gd.__gsRing = Object.assign({}, gd.__gsRing, {x: [found[1]], y: [found[2]]});
      drawRing(gd);
    }
  }, true);

  function minimapOf() {
    return document.querySelector('#' + IDS.minimap + ' .js-plotly-plot');
  }

  // The rectangle of the DAG's view on the minimap: a div over it, placed by the page. A
  // Plotly shape moved by relayout replotted the minimap on every pan or zoom, restyling
  // each of its squares: on the 10,780-node sample expanded (6,000 squares) that was most
  // of a 500 to 650 ms pan, measured with Chromium's profiler.
  function viewBox(mm) {
    const holder = mm.querySelector('.svg-container');
    if (!holder) return null;
    let box = holder.querySelector(':scope > div.gs-view');
    if (!box) {
      box = document.createElement('div');
      box.className = 'gs-view';
      box.style.cssText = 'position: absolute; border: 2px solid #d62728; ' +
        'box-sizing: border-box; pointer-events: none;';
      holder.appendChild(box);
    }
    return box;
  }

  function showView(gd) {
    const mm = minimapOf();
    const full = mm && mm._fullLayout;
    if (!full || !full.xaxis || !gd._fullLayout.xaxis) return;
    const box = viewBox(mm);
    if (!box) return;
    const [x0, x1] = gd._fullLayout.xaxis.range, [y0, y1] = gd._fullLayout.yaxis.range;
    // Only for a graph that opens in part (layout.meta.minimap, figure.build_figure), and
    // then in the margin the DAG keeps for it, level with the plot's top: never over a node.
    const holder = document.getElementById(IDS.minimap);
    const mapped = !!(gd._fullLayout.meta && gd._fullLayout.meta.minimap);
    holder.style.visibility = mapped ? 'visible' : 'hidden';
    holder.style.top = gd._fullLayout.yaxis._offset + 'px';
    const xa = full.xaxis, ya = full.yaxis;
    const clip = (v, length) => Math.max(0, Math.min(length, v));
    const [left, right] = [xa.l2p(x0), xa.l2p(x1)].map((v) => clip(v, xa._length)).sort((a, b) => a - b);
    const [top, bottom] = [ya.l2p(y0), ya.l2p(y1)].map((v) => clip(v, ya._length)).sort((a, b) => a - b);
    Object.assign(box.style, {
      left: (xa._offset + left) + 'px', top: (ya._offset + top) + 'px',
      width: Math.max(right - left, 2) + 'px', height: Math.max(bottom - top, 2) + 'px',
    });
    // For tests and tools: the view the rectangle stands for, in the DAG's units.
    box.dataset.view = JSON.stringify([x0, x1, y0, y1]);
  }

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

  // 6. The selection rings: see the top.
  const RING = SHARED.traces.ring;  // the ring trace's name

  // `data` with its ring trace swapped for an empty one: the same object for as long as the
  // ring looks the same, so that Plotly.react finds nothing changed. The ring kept to draw.
  function takeRing(gd, data) {
    const i = data.findIndex((t) => t && t.name === RING);
    if (i < 0) {
      gd.__gsRing = null;
      return data;
    }
    const ring = gd.__gsRing = data[i];
    const look = JSON.stringify([ring.type, ring.mode, ring.orientation, ring.marker,
                                 ring.hoverinfo, ring.showlegend]);
    if (!gd.__gsRingStub || gd.__gsRingLook !== look) {
      const none = {x: [], y: []};
      if (ring.base) none.base = [];
      gd.__gsRingStub = Object.assign({}, ring, none);
      gd.__gsRingLook = look;
    }
    const out = data.slice();
    out[i] = gd.__gsRingStub;
    return out;
  }

  // Whether the plot holds a ring trace not hidden. (Plotly counts the empty one it holds as
  // hidden, and leaves it out of the legend, as it did the ring of no node.)
  function ringShown(gd) {
    const t = gd.data ? gd.data.find((trace) => trace && trace.name === RING) : null;
    return !!t && t.visible !== false && t.visible !== 'legendonly';
  }

  // A ring's SVG element: `tag` at `place`, hollow, stroked as the ring trace's marker line.
  function outline(tag, line, place) {
    const element = document.createElementNS(SVG, tag);
    element.setAttribute('class', 'gs-ring');
    for (const [name, value] of Object.entries(place)) element.setAttribute(name, String(value));
    element.setAttribute('fill', 'none');
    element.setAttribute('stroke', line.color || '#d62728');
    element.setAttribute('stroke-width', String(line.width || 3));
    return element;
  }

  // The DAG's ring: a hollow circle round each of the trace's points.
  function ringMarks(gd) {
    const ring = gd.__gsRing;
    if (!ring || !Array.isArray(ring.x) || !ringShown(gd)) return [];
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
    const marker = ring.marker || {}, line = marker.line || {};
    return ring.x.map((x, j) => outline('circle', line, {
      cx: xa.l2p(x).toFixed(1), cy: ya.l2p(ring.y[j]).toFixed(1), r: (marker.size || 21) / 2,
    }));
  }

  // The DAG's ring moved, the labels' layer otherwise left as it is: a click's own frame
  // then repaints the ring alone, not every label and arrowhead.
  function drawRing(gd) {
    if (!gd._fullLayout || !gd._fullLayout.xaxis) return;
    const layer = labelLayer(gd);
    if (!layer) return;
    for (const old of layer.querySelectorAll('.gs-ring')) old.remove();
    for (const ring of ringMarks(gd)) layer.appendChild(ring);
  }

  // The timeline's ring: an outline round each ringed bar (horizontal bars on category rows,
  // half a row thick: timeline.build_timeline's bargap).
  function drawBarRing(gd) {
    const full = gd._fullLayout;
    if (!full || !full.xaxis || !full.yaxis || !gd._fullData) return;
    const layer = labelLayer(gd);
    if (!layer) return;
    const xa = full.xaxis, ya = full.yaxis;
    const ring = gd.__gsRing, bars = document.createDocumentFragment();
    if (ring && Array.isArray(ring.y) && ringShown(gd)) {
      const line = (ring.marker && ring.marker.line) || {};
      const half = Math.abs(ya.c2p(0.25) - ya.c2p(0));
      ring.y.forEach((row, j) => {
        const middle = ya.c2p(ya.d2c(row));
        const left = xa.l2p(ring.base[j]), right = xa.l2p(ring.base[j] + ring.x[j]);
        if (![middle, left, right].every(Number.isFinite)) return;
        bars.appendChild(outline('rect', line, {
          x: Math.min(left, right).toFixed(1), y: (middle - half).toFixed(1),
          width: Math.max(Math.abs(right - left), 1).toFixed(1), height: (2 * half).toFixed(1),
        }));
      });
    }
    layer.replaceChildren(bars);
  }

  function timelinePlot() {
    return document.querySelector('#' + IDS.timeline + ' .js-plotly-plot');
  }

  function watchTimeline() {
    const gd = timelinePlot();
    if (!gd || !gd._ev || gd.__gsRingWatch) return;
    const draw = () => drawBarRing(gd);
    gd.on('plotly_afterplot', draw);
    gd.on('plotly_react', () => setTimeout(draw, 0));
    gd.__gsRingWatch = true;
    draw();
  }

  // Every figure the DAG's and the timeline's dcc.Graph draw passes here first: its ring is
  // taken out, and the DAG's is culled, at the view the user has (the same uirevision keeps
  // it) or else at the figure's own.
  function pageReact() {
    const Plotly = window.Plotly;
    if (!Plotly || Plotly.__graphscope) return;
    const react = Plotly.react;
    Plotly.react = function (gd, figure) {
      const owner = gd && gd.closest && figure && Array.isArray(figure.data) && figure.layout ?
        gd.closest('#' + IDS.dag + ', #' + IDS.timeline) : null;
      if (!owner) return react.apply(this, arguments);
      const layout = figure.layout, meta = layout.meta;
      // A patch of the ring alone (every other trace the same object, the layout the same):
      // nothing for Plotly to do. Plotly.react took 50 to 160 ms to find that out.
      const last = gd.__gsServer;
      gd.__gsServer = {data: figure.data, layout: JSON.stringify(layout)};
      if (last && gd._fullLayout && last.layout === gd.__gsServer.layout &&
          last.data.length === figure.data.length &&
          figure.data.every((t, i) => t === last.data[i] || (t.name === RING &&
                                                              last.data[i].name === RING))) {
        takeRing(gd, figure.data);
        if (owner.id === IDS.dag) drawRing(gd); else drawBarRing(gd);
        return Promise.resolve(gd);
      }
      let data = figure.data;
      if (owner.id === IDS.dag) {
        const kept = gd._fullLayout && gd.layout && gd.layout.uirevision === layout.uirevision;
        const r = meta && meta.cull && (kept ? rangesOf(gd._fullLayout.xaxis, gd._fullLayout.yaxis)
          : rangesOf(layout.xaxis, layout.yaxis, true));
        if (r) {
          data = cullAll(gd, data, windowAround(r));
        } else {
          gd.__gsCull = null;  // drawn whole
        }
      }
      data = takeRing(gd, data);
      return react.call(this, gd, Object.assign({}, figure, {data}), ...[...arguments].slice(2));
    };
    Plotly.__graphscope = true;
  }
  document.addEventListener('DOMContentLoaded', pageReact);

  // After a pan or zoom: a new window once the view has left the last one. `__gsRecull`
  // says a redraw for it is on its way (benchmarks/bench_app.py waits for it).
  function recull(gd) {
    const last = gd.__gsCull;
    const r = last && rangesOf(gd._fullLayout.xaxis, gd._fullLayout.yaxis);
    if (!r || within(r, last.win)) return;
    gd.data = takeRing(gd, cullAll(gd, last.full, windowAround(r)));
    gd.__gsRecull = true;
    window.Plotly.redraw(gd).then(() => { gd.__gsRecull = false; });
  }

  function centreOn(gd, x, y) {
    const [x0, x1] = gd._fullLayout.xaxis.range, [y0, y1] = gd._fullLayout.yaxis.range;
    const w = (x1 - x0) / 2, h = (y1 - y0) / 2;  // y1 < y0 on the reversed axis: h keeps it
    window.Plotly.relayout(gd, {'xaxis.range': [x - w, x + w], 'yaxis.range': [y - h, y + h]});
  }

  // One listener per minimap, for whichever DAG plot is drawn then: a listener per DAG plot
  // would keep each replaced plot alive in its closure (as the click listeners would).
  function watchMinimap() {
    const mm = minimapOf();
    if (!mm || !mm._ev || mm.__graphscope) return;
    const show = () => {
      const gd = dagPlot();
      if (gd && gd._fullLayout) showView(gd);
    };
    mm.on('plotly_react', () => setTimeout(show, 0));
    mm.__graphscope = true;
    show();
  }

  function watch() {
    pageReact();
    watchTimeline();
    const gd = dagPlot();
    // dcc.Graph binds its listeners once per plot div, after its first Plotly.react; `_ev` is
    // the event emitter Plotly gives the div (its `on` and `removeAllListeners` wrap it).
    if (!gd || !gd._ev || gd._ev.listeners('plotly_relayout').length === 0) return;
    watchMinimap();
    if (gd.__graphscope) return;  // ours is the only listener left
    gd.removeAllListeners('plotly_relayout');
    const viewed = () => {
      recull(gd);
      drawLabels(gd);
      showView(gd);
    };
    gd.on('plotly_relayout', viewed);
    // While a drag pans the view, Plotly moves its layers itself; the labels move with them.
    gd.on('plotly_relayouting', () => drawLabels(gd));
    // Any redraw (a restyle from the legend, a patch from the server) may change what shows.
    gd.on('plotly_afterplot', () => drawLabels(gd));
    // A new figure from the server (another file, a fold) may open another view.
    gd.on('plotly_react', () => setTimeout(viewed, 0));
    gd.__graphscope = true;
    viewed();
  }
  // A check costs one selector lookup; the DAG's div is made again when the page is.
  setInterval(watch, 200);
})();
