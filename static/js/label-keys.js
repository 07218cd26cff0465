// The labelling page's keys, clicks and page events, mapped to what label.js does (page.answer, ...).
// Keys: S supported (pass), U unsupported (fail), on an ordinal campaign the number keys of its scale, C can't tell, K (or →) skip, Z (or Backspace) undo, B (or ←)
// your labels, ? the shortcut list; none while the focus is in a text field (Esc leaves it), none
// repeated, none while another page labels the campaign. In the change view (Z): S, U, C change
// the answer, Enter keeps it, Esc goes back. Any key, click, scroll or typing counts as activity
// (which keeps the annotator's holds).
(function () {
  "use strict";

  const ANSWER_KEYS = { s: "supported", u: "unsupported", c: "cant_tell", k: "skip", ArrowRight: "skip" };
  const CHANGE_KEYS = { s: "supported", u: "unsupported", c: "cant_tell" };
  // A number key answers with that score where the campaign's scale offers it (a button with that value).
  function scoreKey(key) {
    return /^[0-9]$/.test(key) && document.querySelector('#item-area button.choice[value="' + key + '"]') ? key : null;
  }
  function offered(key) {
    const value = CHANGE_KEYS[key];
    return value && document.querySelector('#item-area button.choice[value="' + value + '"]') ? value : null;
  }

  window.labelKeys = function (page) {
    const typing = window.labelTools.typing;
    const keyOf = window.labelTools.keyOf;
    const dialog = document.getElementById("shortcuts");
    const area = document.getElementById("item-area");

    document.addEventListener("keydown", function (event) {
      page.active();
      if (event.ctrlKey || event.metaKey || event.altKey || page.paused()) return;
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
      if (event.repeat) { if (ANSWER_KEYS[key] || scoreKey(key)) event.preventDefault(); return; }
      if (key === "z" || key === "Backspace") { event.preventDefault(); page.undo(); return; }
      if (page.mode() === "edit") {
        if (offered(key) || scoreKey(key)) { event.preventDefault(); page.change(offered(key) || scoreKey(key)); }
        else if (key === "Enter") { event.preventDefault(); page.leaveEdit("Kept your earlier answer."); }
        else if (key === "Escape") { event.preventDefault(); page.leaveEdit(""); }
        return;
      }
      if (scoreKey(key)) { event.preventDefault(); page.answer(scoreKey(key)); return; }
      if (ANSWER_KEYS[key] && (ANSWER_KEYS[key] === "skip" || offered(key))) { event.preventDefault(); page.answer(ANSWER_KEYS[key]); return; }
      if (key === "b" || key === "ArrowLeft") {
        const back = document.getElementById("back-link");
        if (back) { event.preventDefault(); back.click(); }
      }
    });

    ["pointerdown", "input", "wheel", "touchstart"].forEach(function (name) {
      document.addEventListener(name, page.active, { passive: true });
    });
    let lastMove = 0;
    document.addEventListener("pointermove", function () {
      const now = Date.now();
      if (now - lastMove > 1000) { lastMove = now; page.active(); }
    }, { passive: true });

    // Buttons do what their keys do (a click is subject to the same guard).
    area.addEventListener("submit", function (event) {
      event.preventDefault();
      const button = event.submitter;
      if (!button || page.paused()) return;
      if (page.mode() === "edit") {
        if (button.dataset.action === "keep") page.leaveEdit("Kept your earlier answer."); else page.change(button.value);
      } else {
        page.answer(button.value);
      }
    });
    area.addEventListener("click", function (event) {
      if (event.target.closest('[data-action="undo"]')) page.undo();
    });
    function toggleHelp() {
      if (dialog.open) dialog.close(); else dialog.showModal();
    }
    const help = document.getElementById("help-button");
    help.hidden = false;
    help.addEventListener("click", toggleHelp);
    document.getElementById("retry-now").addEventListener("click", page.retryNow);
    window.addEventListener("online", page.retryNow);
    window.addEventListener("pagehide", page.closing);
    window.addEventListener("beforeunload", function (event) {
      if (!page.unsent()) return;
      event.preventDefault(); // answers not sent yet: a reload sends them, a closed tab only when the campaign opens again
      event.returnValue = "";
    });
    document.addEventListener("visibilitychange", function () {
      if (document.visibilityState === "visible") page.back();
    });
  };
})();
