// One labelling page per person and campaign at a time. Tabs of one browser agree over a
// BroadcastChannel, at once: a page that opens asks whether another has the campaign ("hello"; the
// one that has it answers "here") and, if so, says so and offers to take over; taking over tells
// the other page to pause ("takeover"); a page that closes says "bye", one that starts "active". The server keeps the same
// rule across browsers and devices (labelling/services/pages.py); this makes it instant in one.
(function () {
  "use strict";

  window.labelTabs = function (store) {
    const channel = "BroadcastChannel" in window ? new BroadcastChannel("lsl-label:" + store.scope) : null;
    let id = store.tabId();
    let active = false;
    let answered = null; // while probing: called when another page says it has the campaign
    const listeners = { takenOver: [], closed: [], reopened: [] };

    function post(message) {
      if (channel) channel.postMessage(Object.assign({ from: id }, message));
    }
    function fire(name, detail) {
      listeners[name].forEach(function (fn) { fn(detail); });
    }

    if (channel) {
      channel.onmessage = function (event) {
        const m = event.data || {};
        if (m.type === "hello" && active) post({ type: "here", to: m.from });
        else if (m.type === "here" && m.to === id && answered) answered(m.from);
        else if (m.type === "takeover" && active && m.from !== id) { active = false; fire("takenOver"); }
        else if (m.type === "bye" && !active) fire("closed");
        else if (m.type === "active" && !active) fire("reopened");
      };
    }

    return {
      get id() { return id; },
      // resolve true if another page of this browser has the campaign (within ms)
      probe: function (ms) {
        return new Promise(function (resolve) {
          if (!channel) { resolve(false); return; }
          const timer = window.setTimeout(function () { answered = null; resolve(false); }, ms);
          answered = function (from) {
            window.clearTimeout(timer);
            answered = null;
            if (from === id) id = store.newTabId(); // a duplicated tab came with the other's id
            resolve(true);
          };
          post({ type: "hello" });
        });
      },
      activate: function () { active = true; post({ type: "active" }); },
      takeOver: function () { active = true; post({ type: "takeover" }); },
      pause: function () { active = false; },
      get active() { return active; },
      // closing (or reloading): tell the other tabs, and the server, which stops keeping the campaign for this page
      leave: function (url) {
        if (!active) return;
        post({ type: "bye" });
        if (!navigator.sendBeacon) return;
        const fields = new FormData();
        fields.append("page", id);
        fields.append("csrfmiddlewaretoken", window.lslCsrf());
        navigator.sendBeacon(url, fields);
      },
      on: function (name, fn) { listeners[name].push(fn); },
    };
  };
})();
