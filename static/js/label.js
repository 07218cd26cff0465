// The labelling page, keyboard first, and it never loses an answer. Keys (label-keys.js) do nothing
// for GUARD ms after a new item appears, so a double press cannot answer an unseen item; what the
// page says is built in label-view.js.
//
// The page holds the item on screen plus a few minutes of work at the annotator's pace (leased to
// them; at most data-max-ahead more, no more than they could answer within a hold), so the next
// item appears at once and work goes on through an outage. Answers queue in localStorage
// (label-store.js) with their idempotency key and are sent in order; on a network error, a 5xx or a
// 503 they wait behind a banner that says so and are sent again with backoff (Retry-After wins)
// while the keys keep working. Offline it shows only items whose hold has not run out, and says
// why it waits once none is left. Every reply refills the queue and says where the held items
// stand. One page labels a campaign at a time (label-tabs.js, and the server's 409): another is
// told at once and may take over. While the annotator is active the page renews its leases.
(function () {
  "use strict";

  const view = window.labelView;
  const WORDS = view.WORDS;
  const plural = view.plural;
  const app = document.getElementById("label-app");
  if (!app) return;

  // ------------------------------------------------------------------------------------------
  // State
  // ------------------------------------------------------------------------------------------

  const cfg = {
    nextUrl: app.dataset.nextUrl,
    answerUrl: app.dataset.answerUrl,
    editUrl: function (labelId) { return app.dataset.editUrl.replace(/\/0\/$/, "/" + labelId + "/"); },
    leaveUrl: app.dataset.leaveUrl,
    leaseMs: 1000 * Number(app.dataset.leaseSeconds || 600),
    guardMs: Number(app.dataset.guardMs || 250),
    holdSeconds: Number(app.dataset.holdSeconds || 240),
    maxAhead: Number(app.dataset.maxAhead || 15),
  };
  // offline, an item is shown only while this much of its hold is left (its answer is then certain)
  const OFFLINE_MARGIN_MS = 15000;
  const area = document.getElementById("item-area");
  const statusLine = document.getElementById("label-status");
  const alertBox = document.getElementById("label-alert");
  const banner = document.getElementById("connection-banner");
  const bannerText = document.getElementById("connection-text");
  const timer = document.getElementById("lease-timer");
  const store = window.labelStore(app.dataset.user, app.dataset.campaign); // a queue is one person's
  const tabs = window.labelTabs(store);

  function save() {
    if (state.paused === "tab") return; // the page that took over owns the stored queue now
    store.save(state.queue, state.history);
  }

  const state = {
    current: null, // the item on screen: {id, key, html, expiresAt, shownAt, lost}
    buffer: [], // items held, not shown yet
    queue: [], // answers not yet confirmed by the server, oldest first (loaded once this page labels)
    history: [], // what Z goes back to: [{labelId}|{skipped: id, html}], newest last
    mode: "waiting", // waiting | item | edit | done | elsewhere
    paused: "", // "" labelling; "tab": another tab of this browser took over; "server": another browser or device has it
    editing: null, // {labelId, depth}
    sending: false,
    failures: 0,
    retryAt: 0,
    retryTimer: 0,
    serverDone: false,
    lastActivity: Date.now(),
    lastSync: 0,
    syncing: false,
    undoDepth: 0,
  };
  let uid = Date.now();

  function loadStored() {
    state.queue = store.queue();
    state.history = store.history();
    if (!state.history.length && app.dataset.latestLabel) state.history.push({ labelId: Number(app.dataset.latestLabel) });
  }

  function queued(id) {
    return state.queue.some(function (entry) { return entry.itemId === id && entry.kind !== "change"; });
  }
  function heldIds() {
    const ids = [];
    if (state.current) ids.push(state.current.id);
    state.buffer.forEach(function (item) { ids.push(item.id); });
    state.queue.forEach(function (entry) { if (entry.kind === "answer") ids.push(entry.itemId); });
    return Array.from(new Set(ids));
  }
  function offline() {
    return state.failures > 0 || navigator.onLine === false;
  }
  function answerable(item) {
    return !offline() || item.expiresAt - Date.now() > OFFLINE_MARGIN_MS;
  }

  // ------------------------------------------------------------------------------------------
  // What the annotator sees
  // ------------------------------------------------------------------------------------------

  function say(text) {
    statusLine.textContent = text || "";
  }
  function warn(text, rationale) {
    view.alert(alertBox, text, rationale);
  }
  function updateShare(share) {
    if (share) view.share(app, share);
    updatePending();
  }
  function updatePending() {
    view.pending(state.queue.length);
  }

  function render(html) {
    const template = document.createElement("template");
    template.innerHTML = html;
    const scrollY = window.scrollY;
    area.replaceChildren(template.content);
    area.focus({ preventScroll: true });
    window.scrollTo(window.scrollX, scrollY); // a new item never moves the page
    showUndo();
  }
  // Undo shows once there is something to go back to: an answer in this tab or an earlier label
  function showUndo() {
    const undo = area.querySelector('[data-action="undo"]');
    if (undo) undo.hidden = !(state.history.length || state.queue.some(function (e) { return e.kind !== "change"; }));
  }

  // Keep what was typed in the item's rationale box while it is off screen (undo, a change).
  function stash() {
    const box = state.mode === "item" && state.current ? area.querySelector("#rationale") : null;
    if (box) state.current.draft = box.value;
  }

  function show(item, previous) {
    state.current = item;
    state.mode = "item";
    render(item.html);
    if (item.draft) area.querySelector("#rationale").value = item.draft;
    if (previous) {
      const note = area.querySelector(".previous-answer");
      note.hidden = false;
      note.textContent = "Your answer was: " + WORDS[previous.value] + " (not sent). Answer again.";
      const button = area.querySelector('button[value="' + previous.value + '"]');
      if (button) button.setAttribute("aria-pressed", "true");
      if (previous.rationale) area.querySelector("#rationale").value = previous.rationale;
    }
    item.shownAt = performance.now();
    tick();
    document.dispatchEvent(new CustomEvent("lsl:item-shown", { detail: { id: item.id } }));
  }

  function showWaiting() {
    state.current = null;
    state.mode = "waiting";
    const lapsed = state.buffer.filter(function (item) { return !queued(item.id); }).length;
    area.replaceChildren(view.waiting({ offline: offline(), waiting: state.queue.length, lapsed: lapsed }));
    showUndo();
    tick();
  }

  function showNext() {
    for (let i = 0; i < state.buffer.length; i++) {
      const next = state.buffer[i];
      if (queued(next.id)) { state.buffer.splice(i--, 1); continue; }
      if (!answerable(next)) continue; // offline and its hold ran out: kept for when the connection is back
      state.buffer.splice(i, 1);
      show(next);
      return;
    }
    if (state.serverDone && !state.queue.length && state.doneHtml) {
      state.current = null;
      state.mode = "done";
      render(state.doneHtml);
      tick();
      return;
    }
    showWaiting();
    sync();
  }

  function showBanner() {
    if (!state.failures || !state.queue.length) {
      banner.hidden = true;
      return;
    }
    const n = state.queue.length;
    const seconds = Math.max(0, Math.ceil((state.retryAt - Date.now()) / 1000));
    bannerText.textContent = view.banner(state.problem, n, seconds);
    banner.hidden = false;
  }

  function tick() {
    if (state.paused) return;
    showBanner();
    updatePending();
    showUndo();
    const item = state.mode === "item" ? state.current : null;
    if (!item || item.lost) {
      timer.textContent = "";
      return;
    }
    const left = item.expiresAt - Date.now();
    timer.textContent = view.hold(left, Math.min(120000, cfg.leaseMs / 3));
    // renew while the annotator is active and the hold is past half its time
    const active = Date.now() - state.lastActivity < Math.min(60000, cfg.leaseMs / 2);
    if (active && left < cfg.leaseMs / 2 && Date.now() - state.lastSync > Math.min(5000, cfg.leaseMs / 4)) sync();
  }
  window.setInterval(tick, 1000);

  // ------------------------------------------------------------------------------------------
  // Talking to the server (window.lslPost: app.js)
  // ------------------------------------------------------------------------------------------

  const post = window.lslPost;

  // Merge what the server holds for this page into the screen and the buffer.
  function apply(data) {
    if (data.elsewhere) { pauseFor("server", data.elsewhere.message); return; }
    if (data.share) updateShare(data.share);
    if (data.lease_seconds) cfg.leaseMs = 1000 * data.lease_seconds;
    const holding = data.holding || {};
    const now = Date.now();
    const items = data.items || [];
    const byId = {};
    items.forEach(function (item) { byId[item.id] = item; });
    const current = state.current;
    if (current && state.mode === "item") {
      const status = holding[current.id];
      if (status === "answered" && !queued(current.id)) {
        warn("");
        say("You already answered this item in another tab or window; moved on to the next one.");
        showNext();
      } else if (status === "lost" && !current.lost) {
        current.lost = true;
        warn("Your hold on this item ran out and someone else took it meanwhile, so it is no longer yours to answer. Press K for the next item.");
      } else if (byId[current.id]) {
        current.expiresAt = now + 1000 * byId[current.id].expires_in;
      }
    }
    state.buffer = state.buffer.filter(function (item) {
      if (holding[item.id] && holding[item.id] !== "held") return false;
      if (byId[item.id]) item.expiresAt = now + 1000 * byId[item.id].expires_in;
      return true;
    });
    const known = new Set(heldIds());
    if (state.editing && state.editing.returnTo) known.add(state.editing.returnTo.id);
    items.forEach(function (item) {
      if (known.has(item.id) || !item.html) return;
      state.buffer.push({ id: item.id, key: view.keyOf(item.html), html: item.html, expiresAt: now + 1000 * item.expires_in });
    });
    state.serverDone = !items.length;
    state.doneHtml = data.done_html || state.doneHtml;
    if (state.mode === "waiting" && (state.buffer.length || state.serverDone)) showNext();
    tick();
  }

  // The page's own words about itself, sent with every request (services/pages.py).
  function hints(extra) {
    const ahead = store.ahead(cfg.holdSeconds, cfg.leaseMs / 1000, cfg.maxAhead);
    return Object.assign({ have: heldIds().join(","), page: tabs.id, ahead: ahead }, extra || {});
  }

  function sync(takeOver) {
    if (state.paused || state.syncing || state.sending) return;
    state.syncing = true;
    state.lastSync = Date.now();
    post(cfg.nextUrl, hints(takeOver ? { take_over: "1" } : null))
      .then(function (response) {
        if (response.status === 409) return response.json();
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (data) {
        if (!state.queue.length) state.failures = 0; // the server answers again
        apply(data);
      })
      .catch(function (error) {
        if (state.mode === "waiting") retryLater(error instanceof TypeError ? "The connection is down" : "The server did not answer (" + error.message + ")", 0, true);
      })
      .finally(function () { state.syncing = false; });
  }

  function retryLater(problem, retryAfter, syncOnly) {
    state.failures += 1;
    state.problem = problem;
    const backoff = Math.min(15000, 1000 * Math.pow(2, state.failures - 1));
    const wait = Math.max(backoff, 1000 * (retryAfter || 0)) + Math.random() * 250;
    state.retryAt = Date.now() + wait;
    window.clearTimeout(state.retryTimer);
    state.retryTimer = window.setTimeout(function () {
      state.retryAt = 0;
      if (syncOnly && !state.queue.length) sync(); else pump();
    }, wait);
    if (state.mode === "waiting") showWaiting();
    tick();
  }

  function delivered(entry, result) {
    state.failures = 0;
    state.retryAt = 0;
    const outcome = result ? result.outcome : "invalid";
    const onScreen = state.current && state.current.id === entry.itemId && state.mode === "item";
    if (outcome === "saved" || outcome === "changed" || outcome === "other_tab") {
      if (outcome !== "changed") state.history.push({ labelId: result.label_id });
      if (outcome === "other_tab") {
        warn("You already answered this item in another tab (" + WORDS[result.value] + "); this answer was not stored. Press Z to change it.");
      } else {
        say(result.message);
      }
      if (onScreen) showNext();
    } else if (outcome === "skipped") {
      state.history.push({ skipped: entry.itemId, html: entry.html, key: entry.key });
      say(result.message);
      if (onScreen) showNext();
    } else if (onScreen) {
      // refused while the item is still on screen: it stays, with the rationale in its box
      state.current.lost = true;
      warn(result.message + " Your rationale stays in the box; press K for the next item.");
    } else {
      warn((result ? result.message : "That answer could not be saved.") + (entry.summary ? " (" + entry.summary + ")" : ""), entry.rationale);
    }
    save();
  }

  function pump() {
    if (state.paused === "tab" || state.sending || !state.queue.length) return;
    if (state.retryAt > Date.now()) return;
    const entry = state.queue[0];
    state.sending = true;
    entry.attempts = (entry.attempts || 0) + 1;
    save();
    const url = entry.kind === "change" ? cfg.editUrl(entry.labelId) : cfg.answerUrl;
    const fields = entry.kind === "change"
      ? { value: entry.value, rationale: entry.rationale }
      : Object.assign(hints(), {
        item_id: entry.itemId, value: entry.value, rationale: entry.rationale, key: entry.key, seconds: entry.seconds,
        have: heldIds().filter(function (id) { return id !== entry.itemId; }).join(","),
      });
    post(url, fields)
      .then(function (response) {
        if (response.status === 503 || response.status >= 500 || response.status === 429 || response.status === 408) {
          const busy = response.status === 503;
          throw { problem: busy ? "The server is busy (an import may be running)" : "The server had a problem (HTTP " + response.status + ")",
                  retryAfter: Number(response.headers.get("Retry-After")) || 0 };
        }
        if (response.status === 403 || response.status === 401) {
          throw { problem: "The server did not accept this page's session (logged out in another tab?); log in again in another tab", retryAfter: 10 };
        }
        if (response.status === 404) {
          return { status: 404, data: { detail: "This campaign is no longer yours to label (ask its eval owner); the answer was not saved." } };
        }
        return response.json().then(function (data) { return { status: response.status, data: data }; },
          function () { return { status: response.status, data: {} }; });
      })
      .then(function (reply) {
        state.sending = false;
        if (state.paused === "tab") return; // taken over meanwhile: that page sends it again (same key)
        state.queue.shift();
        const data = reply.data || {};
        delivered(entry, data.result || { outcome: "invalid", message: data.detail || "That answer was refused (HTTP " + reply.status + ")." });
        if (data.items || data.elsewhere) apply(data); else if (data.share) updateShare(data.share);
        tick();
        pump();
      })
      .catch(function (error) {
        state.sending = false;
        const offline = !(error && error.problem);
        retryLater(offline ? "The connection is down" : error.problem, error && error.retryAfter);
      });
  }

  // ------------------------------------------------------------------------------------------
  // Actions
  // ------------------------------------------------------------------------------------------

  function summary(item) {
    const heading = item ? area.querySelector("#label-question") : null;
    return heading ? heading.textContent.replace(/^Question:\s*/, "").slice(0, 80) : "";
  }

  function answer(value) {
    const item = state.current;
    if (state.mode !== "item" || !item) return;
    if (performance.now() - item.shownAt < cfg.guardMs) return; // a double press: ignore
    if (item.lost || queued(item.id)) {
      // no longer theirs, or its answer is on its way: only K moves on (the answer stays queued)
      if (value !== "skip") return;
      if (item.lost) warn("");
      showNext();
      return;
    }
    const form = document.getElementById("answer-form");
    const entry = {
      uid: ++uid, kind: value === "skip" ? "skip" : "answer", itemId: item.id, key: item.key, value: value,
      rationale: form ? form.elements.rationale.value : "", seconds: ((performance.now() - item.shownAt) / 1000).toFixed(1),
      summary: summary(item), html: item.html, attempts: 0,
    };
    state.queue.push(entry);
    state.undoDepth = 0;
    if (value !== "skip") store.timed(Number(entry.seconds));
    save();
    warn("");
    if (item.expiresAt <= Date.now() && value !== "skip") {
      // the hold ran out: wait for the server's word before moving on (the rationale stays if refused)
      say("Saving… (your hold ran out; checking that the item is still yours)");
      item.shownAt = performance.now();
    } else {
      say(value === "skip" ? "Skipping…" : offline() ? "Kept: " + WORDS[value] + "; it is sent once the connection is back."
        : "Saving: " + WORDS[value] + "…");
      showNext();
    }
    pump();
  }

  function undo() {
    if (state.mode === "edit") { openEdit(state.editing.depth + 1); return; }
    const last = state.queue[state.queue.length - 1];
    if (last && last.kind !== "change" && !(state.sending && last === state.queue[0])) {
      // not sent yet (or its tries failed): take it back here; given again, it keeps its key, so
      // the server changes what an earlier try may have stored instead of refusing it
      state.queue.pop();
      save();
      stash();
      if (state.current && state.mode === "item") state.buffer.unshift(state.current);
      warn("");
      say("Undone: your answer was not sent. Answer again.");
      show({ id: last.itemId, key: last.key, html: last.html, expiresAt: Date.now() + cfg.leaseMs }, last);
      sync();
      return;
    }
    if (last && last.kind !== "change") {
      say("Your last answer is being sent; press Z again once it is saved.");
      return;
    }
    openEdit(0);
  }

  function openEdit(depth) {
    const entry = state.history[state.history.length - 1 - depth];
    if (!entry) {
      say(depth ? "Nothing further back in this tab; open Your labels (B) for older ones." : "Nothing to undo yet.");
      return;
    }
    if (entry.skipped) {
      // a skip: take the item back if nobody else took it
      post(cfg.nextUrl, { have: heldIds().concat([entry.skipped]).join(",") })
        .then(function (response) { return response.json(); })
        .then(function (data) {
          const status = (data.holding || {})[entry.skipped];
          state.history.splice(state.history.length - 1 - depth, 1);
          save();
          if (status === "held") {
            stash();
            if (state.current && state.mode === "item") state.buffer.unshift(state.current);
            else if (state.editing && state.editing.returnTo) state.buffer.unshift(state.editing.returnTo);
            state.editing = null;
            show({ id: entry.skipped, key: entry.key, html: entry.html, expiresAt: Date.now() + cfg.leaseMs });
            say("Undone: the item you skipped is back.");
          } else {
            say("The item you skipped was taken by someone else meanwhile.");
          }
          apply(data);
        })
        .catch(function () { say("Could not reach the server to undo; try again in a moment."); });
      return;
    }
    const request = new XMLHttpRequest();
    request.open("GET", cfg.editUrl(entry.labelId));
    request.setRequestHeader("HX-Request", "true");
    request.onload = function () {
      if (request.status !== 200) { say("That answer can no longer be changed here; open Your labels (B)."); return; }
      stash();
      if (state.mode === "item") state.editing = { returnTo: state.current };
      state.editing = { returnTo: state.editing ? state.editing.returnTo : null, labelId: entry.labelId, depth: depth };
      state.mode = "edit";
      render(request.responseText);
      area.dataset.shownAt = String(performance.now());
      const value = area.querySelector("[data-value]").dataset.value;
      say("Back to your answer (" + WORDS[value] + "): press a key to change it, Enter to keep it, Esc to return.");
      tick();
    };
    request.onerror = function () { say("Could not reach the server to undo; try again in a moment."); };
    request.send();
  }

  function leaveEdit(message) {
    const back = state.editing && state.editing.returnTo;
    state.editing = null;
    if (message) say(message);
    if (back) show(back); else showNext();
  }

  function change(value) {
    if (performance.now() - Number(area.dataset.shownAt || 0) < cfg.guardMs) return;
    const article = area.querySelector("[data-label-id]");
    const rationale = area.querySelector("#change-rationale");
    state.queue.push({ uid: ++uid, kind: "change", labelId: Number(article.dataset.labelId), itemId: Number(article.dataset.itemId),
                       value: value, rationale: rationale ? rationale.value : "", attempts: 0 });
    save();
    leaveEdit("Changing your earlier answer to " + WORDS[value] + "…");
    pump();
  }


  // ------------------------------------------------------------------------------------------
  // One page at a time (label-tabs.js in this browser; the server's 409 across browsers)
  // ------------------------------------------------------------------------------------------

  function pauseFor(reason, message) {
    const note = area.querySelector(".elsewhere-note");
    if (state.paused && note) { note.textContent = message; return; }
    stash();
    state.paused = reason;
    if (reason === "tab") { tabs.pause(); state.queue = []; } // the page that has it sends what was stored
    window.clearTimeout(state.retryTimer);
    state.current = null;
    state.buffer = [];
    state.editing = null;
    state.mode = "elsewhere";
    banner.hidden = true;
    timer.textContent = "";
    warn("");
    say("");
    area.replaceChildren(view.elsewhere(message, reason === "server" ? state.queue.length : 0, takeOver));
    updatePending();
    document.getElementById("take-over").focus();
  }

  function takeOver() {
    tabs.takeOver();
    state.paused = "";
    state.failures = 0;
    loadStored(); // the answers the other page had not sent yet are sent from here now
    say("You label here now; the other page paused.");
    showWaiting();
    updatePending();
    sync(true);
    pump();
  }

  tabs.on("takenOver", function () {
    pauseFor("tab", "You opened this campaign in another tab of this browser, so this one paused: your items " +
      "are shown there, and the answers waiting here are sent from there.");
  });
  tabs.on("closed", function () {
    const note = area.querySelector(".elsewhere-note");
    if (note) note.textContent = "The other page was closed: press the button to label here.";
  });
  tabs.on("reopened", function () {
    const note = area.querySelector(".elsewhere-note");
    if (note) note.textContent = "This campaign is open in another tab of this browser again: your items are shown there.";
  });

  // ------------------------------------------------------------------------------------------
  // Keys and clicks
  // ------------------------------------------------------------------------------------------

  window.labelKeys({
    answer: answer,
    undo: undo,
    change: change,
    leaveEdit: leaveEdit,
    mode: function () { return state.mode; },
    paused: function () { return state.paused; },
    active: function () { state.lastActivity = Date.now(); },
    unsent: function () { return state.queue.length; },
    retryNow: function () { state.retryAt = 0; pump(); if (!state.queue.length) sync(); },
    back: function () { state.lastActivity = Date.now(); sync(); }, // the tab came back to the front
    closing: function () { if (!state.paused) tabs.leave(cfg.leaveUrl); }, // others may take over at once
  });

  // Start: unless another tab of this browser has the campaign, send what an earlier page left
  // unsent and ask for the items (the server may still say another browser or device has it).
  tabs.probe(150).then(function (taken) {
    if (taken) {
      pauseFor("tab", "This campaign is open in another tab of this browser: your items are shown there. " +
        "Take it over here, and that tab pauses.");
      return;
    }
    tabs.activate();
    loadStored();
    showUndo();
    updatePending();
    pump();
    sync();
  });
})();
