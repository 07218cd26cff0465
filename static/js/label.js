// The labelling page, keyboard first, and it never loses an answer.
//
// Keys: S supported, U unsupported, C can't tell, K (or →) skip, Z (or Backspace) undo, B (or ←)
// your labels, ? the shortcut list; none while the focus is in a text field (Esc leaves it), none
// for GUARD ms after a new item appears (a double press cannot answer an unseen item), none repeated.
//
// The page holds the item on screen plus a few more (leased to this annotator), so the next one
// appears at once. Answers queue in sessionStorage (a reload keeps them) with their item's
// idempotency key and are sent in order; on a network error, a 5xx or a 503 (database busy) they
// stay queued behind a banner and are sent again with backoff (Retry-After wins) while the keys keep
// working. Every reply refills the queue and says where the held items stand (answered in another
// tab: move on). While the annotator is active the page renews its leases and shows the time left
// once it runs low.
(function () {
  "use strict";

  const ANSWER_KEYS = { s: "supported", u: "unsupported", c: "cant_tell", k: "skip", ArrowRight: "skip" };
  const CHANGE_KEYS = { s: "supported", u: "unsupported", c: "cant_tell" };
  const WORDS = { supported: "supported", unsupported: "unsupported", cant_tell: "can't tell", skip: "skipped" };

  const typing = window.labelTools.typing;
  const keyOf = window.labelTools.keyOf;
  const app = document.getElementById("label-app");
  if (!app) return;

  // ------------------------------------------------------------------------------------------
  // State
  // ------------------------------------------------------------------------------------------

  const cfg = {
    nextUrl: app.dataset.nextUrl,
    answerUrl: app.dataset.answerUrl,
    editUrl: function (labelId) { return app.dataset.editUrl.replace(/\/0\/$/, "/" + labelId + "/"); },
    leaseMs: 1000 * Number(app.dataset.leaseSeconds || 600),
    guardMs: Number(app.dataset.guardMs || 250),
  };
  const area = document.getElementById("item-area");
  const statusLine = document.getElementById("label-status");
  const alertBox = document.getElementById("label-alert");
  const banner = document.getElementById("connection-banner");
  const bannerText = document.getElementById("connection-text");
  const timer = document.getElementById("lease-timer");
  const dialog = document.getElementById("shortcuts");
  const store = window.sessionStorage;
  const QUEUE = "lsl-queue:" + app.dataset.user + ":" + app.dataset.campaign; // a queue is one person's
  const HISTORY = "lsl-history:" + app.dataset.user + ":" + app.dataset.campaign;

  function load(name, fallback) {
    try { return JSON.parse(store.getItem(name)) || fallback; } catch (e) { return fallback; }
  }
  function save() {
    try {
      store.setItem(QUEUE, JSON.stringify(state.queue));
      store.setItem(HISTORY, JSON.stringify(state.history.slice(-50)));
    } catch (e) { /* storage full or off: the queue still lives in memory */ }
  }

  const state = {
    current: null, // the item on screen: {id, key, html, expiresAt, shownAt, lost}
    buffer: [], // items held, not shown yet
    queue: load(QUEUE, []), // answers not yet confirmed by the server, oldest first
    history: load(HISTORY, []), // what Z goes back to: [{labelId}|{skipped: id, html}], newest last
    mode: "waiting", // waiting | item | edit | done
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
  if (!state.history.length && app.dataset.latestLabel) state.history.push({ labelId: Number(app.dataset.latestLabel) });
  let uid = Date.now();

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

  // ------------------------------------------------------------------------------------------
  // What the annotator sees
  // ------------------------------------------------------------------------------------------

  function say(text) {
    statusLine.textContent = text || "";
  }
  function warn(text, rationale) {
    alertBox.replaceChildren();
    if (!text) return;
    const p = document.createElement("p");
    p.textContent = text;
    alertBox.appendChild(p);
    if (rationale) {
      const label = document.createElement("label");
      label.textContent = "Your rationale for that item (not saved; copy it if you need it)";
      const box = document.createElement("textarea");
      box.readOnly = true;
      box.rows = 2;
      box.value = rationale;
      label.appendChild(box);
      alertBox.appendChild(label);
    }
    const close = document.createElement("button");
    close.type = "button";
    close.className = "small";
    close.textContent = "Dismiss";
    close.addEventListener("click", function () { warn(""); });
    alertBox.appendChild(close);
  }

  function updateShare(share) {
    if (!share) return;
    document.getElementById("share-done").textContent = share.done;
    document.getElementById("share-target").textContent = share.target;
    document.getElementById("share-cant-tell").textContent = share.cant_tell ? " · " + share.cant_tell + " can't tell" : "";
    const bar = app.querySelector(".progress");
    bar.setAttribute("aria-valuenow", share.percent);
    bar.firstElementChild.style.width = share.percent + "%";
    updatePending();
  }
  function updatePending() {
    const n = state.queue.length;
    document.getElementById("share-pending").textContent = n ? " (" + n + " being sent)" : "";
  }

  function render(html) {
    const template = document.createElement("template");
    template.innerHTML = html;
    const scrollY = window.scrollY;
    area.replaceChildren(template.content);
    area.focus({ preventScroll: true });
    window.scrollTo(window.scrollX, scrollY); // a new item never moves the page
    const undo = area.querySelector('[data-action="undo"]');
    if (undo) undo.hidden = false;
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
    const p = document.createElement("p");
    p.className = "panel";
    p.setAttribute("aria-busy", "true");
    p.textContent = state.failures
      ? "Your next item comes as soon as the server answers again. Your answers are kept in this tab."
      : "Taking your next item…";
    area.replaceChildren(p);
    tick();
  }

  function showNext() {
    while (state.buffer.length) {
      const next = state.buffer.shift();
      if (!queued(next.id)) { show(next); return; }
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
    const kept = n + " answer" + (n === 1 ? "" : "s") + " kept in this tab";
    bannerText.textContent = state.problem + ": " + kept + ", not saved yet. " +
      (seconds ? "Sending again in " + seconds + " s." : "Sending again now…");
    banner.hidden = false;
  }

  function tick() {
    showBanner();
    updatePending();
    const item = state.mode === "item" ? state.current : null;
    if (!item || item.lost) {
      timer.textContent = "";
      return;
    }
    const left = item.expiresAt - Date.now();
    const warnAt = Math.min(120000, cfg.leaseMs / 3);
    if (left <= 0) {
      timer.textContent = "Your hold on this item ran out. Your answer is still saved unless someone else has taken the item meanwhile.";
    } else if (left < warnAt) {
      const s = Math.ceil(left / 1000);
      timer.textContent = "Your hold on this item ends in " + Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0") +
        ". Any key press, click or typing keeps it.";
    } else {
      timer.textContent = "";
    }
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
      const template = document.createElement("template");
      template.innerHTML = item.html;
      const article = template.content.querySelector("[data-key]");
      state.buffer.push({ id: item.id, key: article ? article.dataset.key : "", html: item.html, expiresAt: now + 1000 * item.expires_in });
    });
    state.serverDone = !items.length;
    state.doneHtml = data.done_html || state.doneHtml;
    if (state.mode === "waiting" && (state.buffer.length || state.serverDone)) showNext();
    tick();
  }

  function sync() {
    if (state.syncing || state.sending) return;
    state.syncing = true;
    state.lastSync = Date.now();
    post(cfg.nextUrl, { have: heldIds().join(",") })
      .then(function (response) { if (!response.ok) throw new Error("HTTP " + response.status); return response.json(); })
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
    if (state.sending || !state.queue.length) return;
    if (state.retryAt > Date.now()) return;
    const entry = state.queue[0];
    state.sending = true;
    entry.attempts = (entry.attempts || 0) + 1;
    save();
    const url = entry.kind === "change" ? cfg.editUrl(entry.labelId) : cfg.answerUrl;
    const fields = entry.kind === "change"
      ? { value: entry.value, rationale: entry.rationale }
      : {
        item_id: entry.itemId, value: entry.value, rationale: entry.rationale, key: entry.key,
        seconds: entry.seconds, have: heldIds().filter(function (id) { return id !== entry.itemId; }).join(","),
      };
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
        state.queue.shift();
        state.sending = false;
        const data = reply.data || {};
        delivered(entry, data.result || { outcome: "invalid", message: data.detail || "That answer was refused (HTTP " + reply.status + ")." });
        if (data.items) apply(data); else if (data.share) updateShare(data.share);
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
    save();
    warn("");
    if (item.expiresAt <= Date.now() && value !== "skip") {
      // the hold ran out: wait for the server's word before moving on (the rationale stays if refused)
      say("Saving… (your hold ran out; checking that the item is still yours)");
      item.shownAt = performance.now();
    } else {
      say(value === "skip" ? "Skipping…" : "Saving: " + WORDS[value] + "…");
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

  function toggleHelp() {
    if (dialog.open) dialog.close(); else dialog.showModal();
  }

  // ------------------------------------------------------------------------------------------
  // Keys and clicks
  // ------------------------------------------------------------------------------------------

  document.addEventListener("keydown", function (event) {
    state.lastActivity = Date.now();
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const key = keyOf(event);
    if (dialog.open) {
      if (key === "?") { event.preventDefault(); dialog.close(); }
      return; // the dialog has the keyboard (Esc closes it)
    }
    if (typing(event.target)) {
      if (key === "Escape") event.target.blur();
      return;
    }
    if (key === "?") { event.preventDefault(); toggleHelp(); return; }
    if (event.repeat) { if (ANSWER_KEYS[key]) event.preventDefault(); return; }
    if (key === "z" || key === "Backspace") { event.preventDefault(); undo(); return; }
    if (state.mode === "edit") {
      if (CHANGE_KEYS[key]) { event.preventDefault(); change(CHANGE_KEYS[key]); }
      else if (key === "Enter") { event.preventDefault(); leaveEdit("Kept your earlier answer."); }
      else if (key === "Escape") { event.preventDefault(); leaveEdit(""); }
      return;
    }
    if (ANSWER_KEYS[key]) { event.preventDefault(); answer(ANSWER_KEYS[key]); return; }
    if (key === "b" || key === "ArrowLeft") {
      const back = document.getElementById("back-link");
      if (back) { event.preventDefault(); back.click(); }
    }
  });

  ["pointerdown", "input", "wheel", "touchstart"].forEach(function (name) {
    document.addEventListener(name, function () { state.lastActivity = Date.now(); }, { passive: true });
  });
  let lastMove = 0;
  document.addEventListener("pointermove", function () {
    const now = Date.now();
    if (now - lastMove > 1000) { lastMove = now; state.lastActivity = now; }
  }, { passive: true });

  // Buttons do what their keys do (a click is subject to the same guard).
  area.addEventListener("submit", function (event) {
    event.preventDefault();
    const button = event.submitter;
    if (!button) return;
    if (state.mode === "edit") {
      if (button.dataset.action === "keep") leaveEdit("Kept your earlier answer."); else change(button.value);
    } else {
      answer(button.value);
    }
  });
  area.addEventListener("click", function (event) {
    if (event.target.closest('[data-action="undo"]')) undo();
  });
  document.getElementById("help-button").hidden = false;
  document.getElementById("help-button").addEventListener("click", toggleHelp);
  document.getElementById("retry-now").addEventListener("click", function () {
    state.retryAt = 0;
    pump();
    if (!state.queue.length) sync();
  });
  window.addEventListener("online", function () { state.retryAt = 0; pump(); sync(); });
  window.addEventListener("beforeunload", function (event) {
    if (!state.queue.length) return;
    event.preventDefault(); // answers not sent yet: a reload keeps them, closing the tab would not
    event.returnValue = "";
  });
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") { state.lastActivity = Date.now(); sync(); }
  });

  // Start: send what a previous load of this tab left unsent, and ask for the items.
  updatePending();
  pump();
  sync();
})();
