// askbridge console: the small script of docs/console.md "Live updates".
// Every page works without it. It shows times in the reader's time zone,
// and re-reads the page when the server says something changed.
(function () {
  "use strict";
  var format;
  try {
    format = new Intl.DateTimeFormat("en-GB", {
      day: "numeric", month: "short", year: "numeric",
      hour: "2-digit", minute: "2-digit", timeZoneName: "short"
    });
  } catch (e) {
    format = null;
  }

  // localise shows each <time datetime> (rendered in UTC by the server)
  // in the browser's time zone.
  function localise(root) {
    if (!format) { return; }
    var times = root.querySelectorAll("time[datetime]");
    for (var i = 0; i < times.length; i++) {
      var t = times[i];
      var d = new Date(t.getAttribute("datetime"));
      if (isNaN(d.getTime())) { continue; }
      t.textContent = format.format(d);
    }
  }

  function note(text) {
    var n = document.getElementById("live-note");
    if (n) { n.textContent = text; }
  }

  // apply takes the page as the server now draws it: when the question's
  // state changed, the whole page; otherwise each region marked data-live.
  function apply(html) {
    var next = new DOMParser().parseFromString(html, "text/html");
    var main = document.getElementById("main");
    var fresh = next.getElementById("main");
    if (!main || !fresh) { return; }
    var was = main.querySelector("[data-state]");
    var now = fresh.querySelector("[data-state]");
    if (was && now && was.getAttribute("data-state") !== now.getAttribute("data-state")) {
      localise(fresh);
      main.innerHTML = fresh.innerHTML;
      note("This question changed: " + (now.getAttribute("data-state-label") || "") + ".");
      return;
    }
    var regions = main.querySelectorAll("[data-live]");
    for (var i = 0; i < regions.length; i++) {
      var r = regions[i];
      var n = r.id && next.getElementById(r.id);
      if (n && n.innerHTML !== r.innerHTML) {
        localise(n);
        r.innerHTML = n.innerHTML;
        note(r.getAttribute("data-live") || "The page was updated.");
      }
    }
  }

  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(window.location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) { if (html) { apply(html); } })
      .catch(function () {})
      .then(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      });
  }

  function start() {
    localise(document);
    var src = document.body.getAttribute("data-events");
    if (!src || !window.EventSource || !window.fetch || !window.DOMParser) { return; }
    var es = new EventSource(src);
    es.addEventListener("changed", refresh);
    document.body.setAttribute("data-live-ready", "");
    es.addEventListener("open", function () { document.body.setAttribute("data-live-open", ""); });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
