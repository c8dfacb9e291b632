// 1. What binds the parts to the plots: each figure the DAG's and the timeline's dcc.Graph
// draw passes through pageReact first (rings taken out, the DAG culled), and `watch` puts the
// page's listeners on each new plot in place of dcc.Graph's relayout echo: see gs-0-core.js.
// Plotly.react is wrapped because dcc.Graph offers no hook between the figure it is given
// and Plotly: neither Dash nor Plotly documents one that sees the figure before it is drawn.
(function () {
  'use strict';
  const gs = window.graphscopePage = window.graphscopePage || {};
  const IDS = window.graphscopeShared.ids;
  const RING = window.graphscopeShared.traces.ring;

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
        gs.takeRing(gd, figure.data);
        if (owner.id === IDS.dag) gs.drawRing(gd); else gs.drawBarRing(gd);
        return Promise.resolve(gd);
      }
      let data = figure.data;
      if (owner.id === IDS.dag) {
        const kept = gd._fullLayout && gd.layout && gd.layout.uirevision === layout.uirevision;
        const r = meta && meta.cull && (kept ? gs.rangesOf(gd._fullLayout.xaxis, gd._fullLayout.yaxis)
          : gs.rangesOf(layout.xaxis, layout.yaxis, true));
        if (r) {
          data = gs.cullAll(gd, data, gs.windowAround(r));
        } else {
          gd.__gsCull = null;  // drawn whole
        }
      }
      data = gs.takeRing(gd, data);
      return react.call(this, gd, Object.assign({}, figure, {data}), ...[...arguments].slice(2));
    };
    Plotly.__graphscope = true;
  }
  document.addEventListener('DOMContentLoaded', pageReact);

  function watch() {
    pageReact();
    gs.watchTimeline();
    const gd = gs.dagPlot();
    // dcc.Graph binds its listeners once per plot div, after its first Plotly.react; `_ev` is
    // the event emitter Plotly gives the div (its `on` and `removeAllListeners` wrap it).
    if (!gd || !gd._ev || gd._ev.listeners('plotly_relayout').length === 0) return;
    gs.watchMinimap();
    if (gd.__graphscope) return;  // ours is the only listener left
    gd.removeAllListeners('plotly_relayout');
    const viewed = () => {
      gs.recull(gd);
      gs.drawLabels(gd);
      gs.showView(gd);
    };
    gd.on('plotly_relayout', viewed);
    // While a drag pans the view, Plotly moves its layers itself; the labels move with them.
    gd.on('plotly_relayouting', () => gs.drawLabels(gd));
    // Any redraw (a restyle from the legend, a patch from the server) may change what shows.
    gd.on('plotly_afterplot', () => gs.drawLabels(gd));
    // A new figure from the server (another file, a fold) may open another view.
    gd.on('plotly_react', () => setTimeout(viewed, 0));
    gd.__graphscope = true;
    viewed();
  }
  // A check costs one selector lookup; the DAG's div is made again when the page is.
  setInterval(watch, 200);

  Object.assign(gs, {pageReact, watch});
})();
