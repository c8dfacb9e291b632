// The search box searches as you type: its dcc.Input sends its text once typing pauses
// (components.SEARCH_PAUSE_S). Enter, or leaving the box (a press on "next" does), sends it
// at once: with a pause set, Dash's box waits out the pause even then, and "next" pressed
// straight after typing stepped through the last search's matches.
(function () {
  'use strict';
  function send(event) {
    const box = event.target;
    const dash = window.dash_clientside;
    if (!box || box.id !== 'search' || !dash || !dash.set_props) return;
    dash.set_props('search', {value: box.value});
  }
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') send(event);
  }, true);
  document.addEventListener('focusout', send, true);
})();
