// What the labelling page keeps in the browser, per person and campaign:
// * the answers the server has not confirmed yet, in order, and what Z goes back to: in localStorage,
//   so a reload, a crash or a closed tab keeps them, and the tab that takes the campaign over sends them;
// * the annotator's pace (seconds per item, from their last answers), which sets how much the page holds;
// * this tab's id (sessionStorage: a reload keeps it, another tab has its own).
(function () {
  "use strict";

  function usable(name) {
    try { const s = window[name]; s.setItem("lsl-probe", "1"); s.removeItem("lsl-probe"); return s; } catch (e) { return null; }
  }
  const local = usable("localStorage");
  const session = usable("sessionStorage");

  function read(store, name, fallback) {
    if (!store) return fallback;
    try { return JSON.parse(store.getItem(name)) || fallback; } catch (e) { return fallback; }
  }
  function write(store, name, value) {
    if (!store) return;
    try { store.setItem(name, JSON.stringify(value)); } catch (e) { /* full: what is in memory still counts */ }
  }
  function randomId() {
    const bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    return Array.from(bytes, function (b) { return b.toString(16).padStart(2, "0"); }).join("");
  }

  window.labelStore = function (user, campaign) {
    const scope = user + ":" + campaign;
    const QUEUE = "lsl-queue:" + scope;
    const HISTORY = "lsl-history:" + scope;
    const PACE = "lsl-pace:" + scope;
    const TAB = "lsl-tab:" + campaign;

    // answers an older version of the page left in this tab's sessionStorage join the shared queue
    const before = read(session, QUEUE, []);
    if (before.length) {
      write(local, QUEUE, read(local, QUEUE, []).concat(before));
      session.removeItem(QUEUE);
    }

    return {
      scope: scope,
      queue: function () { return read(local || session, QUEUE, []); },
      history: function () { return read(local || session, HISTORY, []); },
      save: function (queue, history) {
        write(local || session, QUEUE, queue);
        write(local || session, HISTORY, history.slice(-50));
      },
      // seconds an item takes this annotator: the median of their last 12 answers (20 s before any)
      pace: function () {
        const seen = read(local, PACE, []).slice().sort(function (a, b) { return a - b; });
        if (!seen.length) return 20;
        return Math.min(300, Math.max(2, seen[Math.floor(seen.length / 2)]));
      },
      // items to hold beyond the one on screen: a few minutes at this pace, all answerable within one hold
      ahead: function (holdSeconds, leaseSeconds, most) {
        const pace = this.pace();
        return Math.max(2, Math.min(most, Math.ceil(holdSeconds / pace), Math.floor((0.8 * leaseSeconds) / pace) - 1));
      },
      timed: function (seconds) {
        if (!(seconds > 0)) return;
        write(local, PACE, read(local, PACE, []).concat([Number(seconds)]).slice(-12));
      },
      tabId: function () {
        let id = session ? session.getItem(TAB) : null;
        if (!id) id = this.newTabId();
        return id;
      },
      newTabId: function () {
        const id = randomId();
        if (session) session.setItem(TAB, id);
        return id;
      },
    };
  };
})();
