// Site-wide behaviour, small and optional (every page works without it):
// * on narrow screens the top bar's menu folds behind a "Menu" button;
// * every region that scrolls (a wide table, a long context) can be reached and scrolled with the
//   keyboard: it gets tabindex="0" and a name, as screen readers expect;
// * window.lslPost(url, fields): a form POST that asks for JSON, with the CSRF token (label.js);
// * a button with data-copy="ID" copies that field's value (a link, a password or a key shown once).
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  function csrf() {
    const cookie = document.cookie.split("; ").find(function (c) { return c.indexOf("csrftoken=") === 0; });
    if (cookie) return decodeURIComponent(cookie.slice("csrftoken=".length));
    const input = document.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  window.lslCsrf = csrf;

  window.lslPost = function (url, fields) {
    const body = new URLSearchParams();
    Object.keys(fields).forEach(function (name) {
      if (fields[name] !== undefined && fields[name] !== null) body.append(name, fields[name]);
    });
    const controller = new AbortController();
    const timeout = window.setTimeout(function () { controller.abort(); }, 20000);
    return fetch(url, {
      method: "POST",
      body: body,
      credentials: "same-origin",
      headers: { Accept: "application/json", "X-CSRFToken": csrf() },
      signal: controller.signal,
    }).finally(function () { window.clearTimeout(timeout); });
  };

  document.addEventListener("click", function (event) {
    const button = event.target.closest && event.target.closest("[data-copy]");
    if (!button) return;
    const field = document.getElementById(button.dataset.copy);
    if (!field) return;
    field.select();
    const done = function () { button.textContent = "Copied"; };
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(field.value).then(done, function () {});
    else if (document.execCommand && document.execCommand("copy")) done();
  });

  const toggle = document.querySelector(".nav-toggle");
  const menu = document.getElementById("site-menu");
  if (toggle && menu) {
    toggle.hidden = false;
    toggle.addEventListener("click", function () {
      const open = toggle.getAttribute("aria-expanded") !== "true";
      toggle.setAttribute("aria-expanded", String(open));
      menu.classList.toggle("open", open);
    });
    document.addEventListener("keydown", function (event) {
      if (event.key === "Escape" && menu.classList.contains("open")) {
        toggle.setAttribute("aria-expanded", "false");
        menu.classList.remove("open");
        toggle.focus();
      }
    });
  }

  function nameOf(element) {
    const caption = element.querySelector("caption");
    if (caption) return caption.textContent.trim();
    let node = element;
    while (node && node !== document.body) {
      let sibling = node.previousElementSibling;
      while (sibling) {
        if (/^H[1-6]$/.test(sibling.tagName)) return sibling.textContent.trim();
        sibling = sibling.previousElementSibling;
      }
      node = node.parentElement;
    }
    return "Scrollable content";
  }

  // Wide tables scroll inside a box of their own instead of widening the page.
  document.querySelectorAll("main table").forEach(function (table) {
    if (table.closest(".table-scroll")) return;
    const box = document.createElement("div");
    box.className = "table-scroll";
    table.parentNode.insertBefore(box, table);
    box.appendChild(table);
  });

  function focusable(element) {
    return element.matches("a[href], button, input, select, textarea, [tabindex]");
  }

  function markScrollRegions() {
    document.querySelectorAll("main *").forEach(function (element) {
      if (focusable(element)) return;
      const style = window.getComputedStyle(element);
      const scrolls = (/(auto|scroll)/.test(style.overflowX) && element.scrollWidth > element.clientWidth + 1) ||
        (/(auto|scroll)/.test(style.overflowY) && element.scrollHeight > element.clientHeight + 1);
      if (!scrolls) return;
      element.tabIndex = 0;
      if (!element.hasAttribute("role")) element.setAttribute("role", "region");
      if (!element.hasAttribute("aria-label") && !element.hasAttribute("aria-labelledby")) {
        element.setAttribute("aria-label", nameOf(element) + " (scrolls)");
      }
    });
  }
  markScrollRegions();
  let pending = 0;
  window.addEventListener("resize", function () {
    window.clearTimeout(pending);
    pending = window.setTimeout(markScrollRegions, 200);
  });
  document.addEventListener("htmx:afterSettle", markScrollRegions);
  document.addEventListener("lsl:item-shown", markScrollRegions);
})();
