// backscroll viewer: search as you type, copy buttons, local times. No framework.
"use strict";

(function () {
  const form = document.getElementById("search");
  const results = document.getElementById("results");
  if (form && results) {
    let timer = 0;
    let controller = null;
    let sequence = 0;
    const run = (preloaded) => {
      const params = new URLSearchParams(new FormData(form));
      for (const [k, v] of [...params]) if (!v) params.delete(k);
      const qs = params.toString();
      history.replaceState(null, "", qs ? "/?" + qs : "/");
      if (controller) controller.abort();
      controller = new AbortController();
      const mine = ++sequence;
      fetch(preloaded || "/results?" + qs, { signal: controller.signal, credentials: "same-origin" })
        .then((r) => r.text())
        .then((html) => {
          if (mine !== sequence) return;
          results.innerHTML = html;
          const hint = document.querySelector(".hint");
          if (hint && params.get("q")) hint.remove();
          localTimes(results);
        })
        .catch(() => {});
    };
    form.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(run, 120);
    });
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      clearTimeout(timer);
      run();
    });
    // A page opened with a query is sent before its search ran: fetch the results now.
    // (the page's <link rel=preload> started that fetch while the page was parsed).
    if (results.querySelector("[data-pending]")) {
      const pre = document.getElementById("preload-results");
      run(pre ? pre.getAttribute("href") : null);
    }
  }

  function fallbackCopy(text) {
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.appendChild(area);
    area.select();
    let ok = false;
    try {
      ok = document.execCommand("copy");
    } catch (err) {
      ok = false;
    }
    area.remove();
    return ok;
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-copy]");
    if (!button) return;
    event.preventDefault();
    const text = button.dataset.copy;
    const done = (ok) => {
      button.textContent = ok ? "Copied" : "Select and copy";
      button.dataset.copied = ok ? "yes" : "no";
      setTimeout(() => { button.textContent = "Copy"; }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(() => done(true), () => done(fallbackCopy(text)));
    } else {
      done(fallbackCopy(text));
    }
  });

  function localTimes(root) {
    for (const t of root.querySelectorAll("time[datetime]")) {
      const d = new Date(t.getAttribute("datetime"));
      if (isNaN(d)) continue;
      const pad = (n) => String(n).padStart(2, "0");
      t.textContent = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
        `${pad(d.getHours())}:${pad(d.getMinutes())}`;
      t.title = t.getAttribute("datetime");
    }
  }
  localTimes(document);
})();
