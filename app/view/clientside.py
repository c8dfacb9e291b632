"""The callbacks that run in the browser, as JavaScript: ``server.register`` wires them.

They move the view, scroll the panel, keep the address and take keys without a round trip
to the server; each is named for what it does.
"""

from __future__ import annotations

import json

from graphscope.analysis.search import BUFFER_SEARCH

# ``rings`` once the DAG holding it (its ring trace last) is drawn in the page. What is drawn
# after the DAG (hover texts, the timeline) waits for this: fetched at once, it arrived first
# and held up the first paint.
WHEN_PAINTED = """
function(rings) {
  if (!rings) { return rings; }
  const begun = Date.now();
  return new Promise(resolve => {
    const check = () => {
      const gd = document.querySelector('#' + window.graphscopeShared.ids.dag + ' .js-plotly-plot');
      const drawn = gd && gd._fullData && gd.data && gd.data.length === rings.dag + 1
        && gd.querySelector('.scatterlayer .trace, canvas.gl-canvas');
      if (drawn || Date.now() - begun > 30000) {
        requestAnimationFrame(() => setTimeout(() => resolve(rings), 0));
      } else {
        setTimeout(check, 20);
      }
    };
    check();
  });
}
"""


# Move the DAG's view to a node (``focus`` from the ring callback). Through relayout, as a
# user's zoom would be, so that the next redraw (same uirevision) keeps it.
FOCUS = """
function(focus) {
  if (!focus || !focus.ranges) { return window.dash_clientside.no_update; }
  const begun = Date.now();
  return new Promise(resolve => {
    const move = () => {
      const gd = document.querySelector('#' + window.graphscopeShared.ids.dag + ' .js-plotly-plot');
      if (gd && gd._fullLayout && window.Plotly) {
        window.Plotly.relayout(gd, focus.ranges).then(() => resolve(focus.at));
      } else if (Date.now() - begun < 10000) {
        setTimeout(move, 50);
      } else {
        resolve(window.dash_clientside.no_update);
      }
    };
    move();
  });
}
"""

# A new node in the panel is read from its top.
PANEL_TOP = """
function(children) {
  const panel = document.getElementById('node-panel');
  if (panel) { panel.scrollTop = 0; }
  return window.dash_clientside.no_update;
}
"""

# The page's state in its address, so that a reload or a shared link restores it.
TO_URL = """
function(source, selected, page, colour, grouping) {
  const params = new URLSearchParams();
  if (source) { params.set('file', source); }
  if (selected) { params.set('node', selected); }
  if (grouping && grouping.compare && grouping.source === source) {
    params.set('compare', grouping.compare);
  }
  if (page && page !== 'graph') { params.set('view', page); }
  if (colour && colour !== 'type') { params.set('colour', colour); }
  const search = params.toString() ? '?' + params.toString() : '';
  return search === window.location.search ? window.dash_clientside.no_update : search;
}
"""

# Keys: n and p step through search matches; the arrows follow the selected node's edges
# (left and up: what it depends on; right and down: what follows it).
KEYS = """
function(id) {
  if (window._graphscopeKeys) { return window.dash_clientside.no_update; }
  window._graphscopeKeys = true;
  document.addEventListener('keydown', event => {
    const target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    if (target && (target.tagName === 'INPUT' || target.tagName === 'TEXTAREA'
                   || target.isContentEditable)) { return; }
    const click = selector => {
      const button = document.querySelector(selector);
      if (button) { button.click(); event.preventDefault(); }
    };
    if (event.key === 'n') { click('#next'); }
    else if (event.key === 'p') { click('#prev'); }
    else if (event.key === 'ArrowRight' || event.key === 'ArrowDown') {
      click('#node-successors button.link');
    } else if (event.key === 'ArrowLeft' || event.key === 'ArrowUp') {
      click('#node-predecessors button.link');
    }
  });
  return window.dash_clientside.no_update;
}
"""

# The timeline's relayouts that move the x axis, the only ones the server needs: plotly also
# reports resizes, and a request for one sent while a zoom's redraw is on its way makes Dash
# drop that redraw.
X_CHANGES = """
function(relayout) {
  const moved = relayout && Object.keys(relayout).some(k => k.startsWith('xaxis.'));
  return moved ? relayout : window.dash_clientside.no_update;
}
"""


# A buffer or segment clicked in the panel: the search for every node that touches it. The
# links are drawn anew with each panel, which calls this with no clicks: nothing then.
FIND_BUFFER = """
function(clicks) {
  const id = window.dash_clientside.callback_context.triggered_id;
  if (!id || typeof id !== 'object' || !(clicks || []).some(Boolean)) {
    return window.dash_clientside.no_update;
  }
  return PREFIX + id.name;
}
""".replace("PREFIX", json.dumps(BUFFER_SEARCH))
