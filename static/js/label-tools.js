// Shared by the labelling page and the change page: find words in the context, and which keys
// count (none while the focus is in a text field). On the change page opened on its own (from
// "Your labels") S, U and C change the label and Enter keeps it; label.js drives the labelling page.
(function () {
  "use strict";

  function typing(target) {
    return target && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName));
  }

  function keyOf(event) {
    return event.key.length === 1 ? event.key.toLowerCase() : event.key;
  }

  // ------------------------------------------------------------------------------------------
  // Find in context (the labelling page and the change page)
  // ------------------------------------------------------------------------------------------

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
    if (first) {
      // scroll inside the context pane only: the page itself never moves
      root.scrollTop = first.offsetTop - root.offsetTop - root.clientHeight / 3;
    }
    return count;
  }

  document.addEventListener("input", function (event) {
    if (event.target.id === "find-in-context") find(event.target.value);
  });
  document.addEventListener("click", function (event) {
    const button = event.target.closest && event.target.closest("#find-claim");
    if (button) {
      const box = document.getElementById("find-in-context");
      if (box) box.value = button.dataset.claim;
      find(button.dataset.claim);
    }
  });

  window.labelTools = { typing: typing, keyOf: keyOf };

  if (document.getElementById("label-app")) return;
  const CHANGE_KEYS = { s: "supported", u: "unsupported", c: "cant_tell" };
  document.addEventListener("keydown", function (event) {
    const form = document.getElementById("change-form");
    if (!form || event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    if (typing(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    const key = keyOf(event);
    const value = CHANGE_KEYS[key];
    const button = value ? form.querySelector('button[value="' + value + '"]:not([data-action])')
      : key === "Enter" ? form.querySelector('[data-action="keep"]') : null;
    if (button) { event.preventDefault(); button.click(); }
  });
})();
