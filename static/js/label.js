// Keyboard-first labelling: S, U, C, K, B (and arrows) act unless the focus is in a text field.
(function () {
  "use strict";
  const KEYS = { s: "supported", u: "unsupported", c: "cant_tell", "?": "cant_tell", k: "skip", ArrowRight: "skip" };

  function typing(target) {
    return target && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
  }

  function submit(value) {
    const form = document.getElementById("answer-form");
    if (!form || form.dataset.busy === "1") return;
    const button = form.querySelector('button[value="' + value + '"]');
    if (!button) return;
    form.dataset.busy = "1";
    // A form swapped in a moment ago is wired up by htmx only when the swap settles: do it now,
    // or a quick key press right after the swap would post the form natively (a full page load).
    if (window.htmx) window.htmx.process(form);
    // click(), not requestSubmit(button): htmx 2 sends the value of the last *clicked* button,
    // so with requestSubmit the answer would arrive without its value.
    button.click();
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) {
      if (event.key === "Escape" && typing(event.target)) event.target.blur();
      return;
    }
    const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
    if (KEYS[key]) {
      event.preventDefault();
      submit(KEYS[key]);
    } else if (key === "b" || key === "ArrowLeft") {
      const back = document.getElementById("back-link");
      if (back) { event.preventDefault(); back.click(); }
    }
  });

  function clearMarks(root) {
    root.querySelectorAll("mark.found").forEach(function (mark) {
      mark.replaceWith(document.createTextNode(mark.textContent));
    });
    root.normalize();
  }

  function find(words) {
    const root = document.getElementById("context-chunks");
    if (!root) return 0;
    clearMarks(root);
    const terms = words.toLowerCase().split(/\W+/).filter(function (w) { return w.length > 2; });
    if (!terms.length) return 0;
    const pattern = new RegExp("(" + terms.map(function (t) { return t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }).join("|") + ")", "gi");
    let count = 0;
    root.querySelectorAll(".chunk-text").forEach(function (node) {
      const text = node.textContent;
      if (!pattern.test(text)) return;
      pattern.lastIndex = 0;
      const fragment = document.createDocumentFragment();
      let last = 0;
      text.replace(pattern, function (match, _g, offset) {
        fragment.appendChild(document.createTextNode(text.slice(last, offset)));
        const mark = document.createElement("mark");
        mark.className = "found";
        mark.textContent = match;
        fragment.appendChild(mark);
        last = offset + match.length;
        count += 1;
      });
      fragment.appendChild(document.createTextNode(text.slice(last)));
      node.replaceChildren(fragment);
    });
    const first = root.querySelector("mark.found");
    if (first) first.scrollIntoView({ block: "nearest" });
    return count;
  }

  document.addEventListener("input", function (event) {
    if (event.target.id === "find-in-context") find(event.target.value);
  });
  document.addEventListener("click", function (event) {
    if (event.target.id === "find-claim") {
      const box = document.getElementById("find-in-context");
      if (box) box.value = event.target.dataset.claim;
      find(event.target.dataset.claim);
    }
  });

  // After htmx swaps in the next item, give the page the focus back so the next key works at once.
  document.body.addEventListener("htmx:afterSwap", function () {
    const area = document.getElementById("item-area");
    if (area) area.focus({ preventScroll: false });
  });
  document.body.addEventListener("htmx:responseError", function () {
    const form = document.getElementById("answer-form");
    if (form) form.dataset.busy = "";
  });
})();
