// 3. The minimap's view rectangle, and a click on it centring the DAG: see gs-0-core.js.
(function () {
  'use strict';
  const gs = window.graphscopePage = window.graphscopePage || {};
  const IDS = window.graphscopeShared.ids;

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
    const mm = gs.minimapOf();
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

  function centreOn(gd, x, y) {
    const [x0, x1] = gd._fullLayout.xaxis.range, [y0, y1] = gd._fullLayout.yaxis.range;
    const w = (x1 - x0) / 2, h = (y1 - y0) / 2;  // y1 < y0 on the reversed axis: h keeps it
    window.Plotly.relayout(gd, {'xaxis.range': [x - w, x + w], 'yaxis.range': [y - h, y + h]});
  }

  // One listener per minimap, for whichever DAG plot is drawn then: a listener per DAG plot
  // would keep each replaced plot alive in its closure (as the click listeners would).
  function watchMinimap() {
    const mm = gs.minimapOf();
    if (!mm || !mm._ev || mm.__graphscope) return;
    const show = () => {
      const gd = gs.dagPlot();
      if (gd && gd._fullLayout) showView(gd);
    };
    mm.on('plotly_react', () => setTimeout(show, 0));
    mm.__graphscope = true;
    show();
  }

  Object.assign(gs, {centreOn, showView, viewBox, watchMinimap});
})();
