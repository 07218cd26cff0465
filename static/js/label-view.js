// What the labelling page says, built here so label.js keeps to the logic: alerts, progress, the
// waiting panel (saying why it waits), the connection banner's words, the "open elsewhere" panel.
// Everything is text nodes (never HTML from strings), so nothing the server or a rationale holds runs.
(function () {
  "use strict";

  const BASE_WORDS = { supported: "supported", unsupported: "unsupported", cant_tell: "can't tell", skip: "skipped" };
  // An answer in the campaign's words: its button's (relevant, 4, ...), else the base word.
  const WORDS = new Proxy(BASE_WORDS, {
    get: function (words, value) {
      const button = typeof value === "string" && /^[a-z_0-9]+$/.test(value)
        ? document.querySelector('button.choice[data-word][value="' + value + '"]') : null;
      if (button && value !== "skip") return /^[0-9]+$/.test(value) ? "score " + value : button.dataset.word;
      return words[value] || String(value);
    },
  });

  function plural(n, word) {
    return n + " " + word + (n === 1 ? "" : "s");
  }
  function element(tag, attributes, text) {
    const node = document.createElement(tag);
    Object.keys(attributes || {}).forEach(function (name) { node.setAttribute(name, attributes[name]); });
    if (text) node.textContent = text;
    return node;
  }

  // An error in the corner, with the rationale of an answer that could not be saved (to copy).
  function alert(box, text, rationale) {
    box.replaceChildren();
    if (!text) return;
    box.appendChild(element("p", {}, text));
    if (rationale) {
      const label = element("label", {}, "Your rationale for that item (not saved; copy it if you need it)");
      const area = element("textarea", { rows: "2", readonly: "" });
      area.value = rationale;
      label.appendChild(area);
      box.appendChild(label);
    }
    const close = element("button", { type: "button", class: "small" }, "Dismiss");
    close.addEventListener("click", function () { alert(box, ""); });
    box.appendChild(close);
  }

  function share(app, progress) {
    document.getElementById("share-done").textContent = progress.done;
    document.getElementById("share-target").textContent = progress.target;
    document.getElementById("share-cant-tell").textContent = progress.cant_tell ? " · " + progress.cant_tell + " can't tell" : "";
    const bar = app.querySelector(".progress");
    bar.setAttribute("aria-valuenow", progress.percent);
    bar.firstElementChild.style.width = progress.percent + "%";
  }

  function pending(n) {
    document.getElementById("share-pending").textContent = n ? " (" + n + " being sent)" : "";
  }

  // Why the page waits: online, it is taking the next item; offline, what it holds ran out, and what waits.
  function waiting(o) {
    const box = element("div", { class: "panel waiting", "aria-busy": "true", role: "status" });
    const lines = [];
    if (!o.offline) {
      lines.push("Taking your next item…");
    } else {
      box.appendChild(element("h1", { class: "waiting-title" }, "Waiting for the connection"));
      const it = o.lapsed === 1;
      lines.push(o.lapsed
        ? "The connection is down, and your hold on the " + plural(o.lapsed, "item") + " left on this page ran out " +
          "meanwhile: " + (it ? "it comes" : "they come") + " back when the connection does, unless someone else took " +
          (it ? "it." : "them.")
        : "The connection is down and you have answered every item this page held.");
      lines.push(o.waiting
        ? plural(o.waiting, "answer") + (o.waiting === 1 ? " is" : " are") + " waiting in this browser and will be sent " +
          "as soon as the connection is back; then your next items come. Keep this tab open."
        : "Your next items come as soon as the connection is back.");
    }
    lines.forEach(function (text) { box.appendChild(element("p", {}, text)); });
    return box;
  }

  // The hold on the item on screen, in words once it runs low (the last ``warnAt`` ms), or nothing.
  function hold(left, warnAt) {
    if (left <= 0) {
      return "Your hold on this item ran out. Your answer is still saved unless someone else has taken the item meanwhile.";
    }
    if (left >= warnAt) return "";
    const s = Math.ceil(left / 1000);
    return "Your hold on this item ends in " + Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0") +
      ". Any key press, click or typing keeps it.";
  }

  // The idempotency key the server put in an item's form.
  function keyOf(html) {
    const template = document.createElement("template");
    template.innerHTML = html;
    const article = template.content.querySelector("[data-key]");
    return article ? article.dataset.key : "";
  }

  function banner(problem, n, seconds) {
    return problem + ": " + plural(n, "answer") + (n === 1 ? " is" : " are") +
      " waiting in this browser, not saved yet; they are sent as soon as it is back. " +
      (seconds ? "Trying again in " + seconds + " s." : "Trying again now…");
  }

  // Another page has the campaign: say so, and offer to take it over (the button gets the focus).
  function elsewhere(message, sending, onTakeOver) {
    const box = element("div", { class: "panel elsewhere", role: "alert" });
    box.appendChild(element("h1", {}, "This campaign is open elsewhere"));
    box.appendChild(element("p", { class: "elsewhere-note" }, message));
    if (sending) {
      box.appendChild(element("p", {}, plural(sending, "answer") + " given on this page " + (sending === 1 ? "is" : "are") +
        " still being sent from here; nothing is lost."));
    }
    const button = element("button", { type: "button", class: "primary", id: "take-over" }, "Label here instead");
    button.addEventListener("click", onTakeOver);
    box.appendChild(button);
    return box;
  }

  window.labelView = {
    WORDS: WORDS, plural: plural, alert: alert, share: share, pending: pending,
    waiting: waiting, banner: banner, elsewhere: elsewhere, hold: hold, keyOf: keyOf,
  };
})();
